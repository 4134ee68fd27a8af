"""Another agent's MCP servers as Kit's `mcp.servers.<name>` (docs/mcp.md).

Kit's server is `command` (stdio: args, env, cwd) or `url` (streamable HTTP: headers). The keys
with a Kit equivalent are converted; the rest is reported by name and not imported. kit.yaml goes
into git, so a literal `env` or `headers` value (it may be a secret) is never written: kit.yaml
reads it from a `${VAR}` reference to Kit's environment instead, and the report names the key and
the variable, never the value. A secret Kit cannot read from its environment is not written
either: Kit expands `${VAR}` only in `env` and `headers`, not in `url` or `args`, so an entry whose
url carries a query string (`?api_key=…`) or a token-like path segment, or whose args hold a value
after a flag like `--token`/`--api-key` (or `--token=…`), is reported by its key path and not
imported. An entry Kit would refuse is reported and left out, so the kit.yaml an import writes
always loads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kit.importers.reading import kind_of
from kit.importers.values import checked, kit_problems

_REF = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
# an Authorization value keeps its scheme: "Bearer sk-…" becomes "Bearer ${DOCS_AUTHORIZATION}"
_SCHEME = re.compile(r"^(?:Bearer|Basic|Token|Bot)\s+", re.I)
# a flag whose value is a secret: --token, --api-key, --github-token, --client-secret, -password …
_SECRET_FLAG = re.compile(r"^--?(?:[a-z0-9]+[-_])*(?:token|api[-_]?key|apikey|key|secret|password|passwd|pwd|"
                          r"credentials?)$", re.I)
# a token's well-known prefix: sk-…, ghp_…, github_pat_…, glpat-…, xoxb-…
_TOKEN_PREFIX = re.compile(r"^(?:(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}|(?:ghp|gho|ghs|ghu|github_pat|glpat|xox[abprs])[-_].+)$")
STDIO = frozenset({"stdio"})
HTTP = frozenset({"http", "streamable-http", "streamable_http", "streamablehttp", "sse"})


@dataclass(frozen=True)
class Dialect:
    """How one agent spells a server: its file, its key names for Kit's keys, its timeouts."""

    origin: str  # the file, as reports name it
    mapping: str  # what the file calls a mapping: "an object" (JSON), "a mapping" (YAML)
    renamed: Mapping[str, str] = field(default_factory=dict)  # their key -> Kit's
    seconds: Mapping[str, tuple[str, float]] = field(default_factory=dict)  # their timeout -> (Kit's key, to seconds)


OPENCLAW = Dialect("openclaw.json", "an object", {"workingDirectory": "cwd"},
                   {"connectionTimeoutMs": ("startup_timeout_s", 0.001), "requestTimeoutMs": ("timeout_s", 0.001)})
HERMES = Dialect("config.yaml", "a mapping", {}, {"connect_timeout": ("startup_timeout_s", 1.0), "timeout": ("timeout_s", 1.0)})


def _variable(name: str) -> str:
    """An environment variable name made of `name` (letters, digits, _; not starting with a digit)."""
    var = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return f"_{var}" if var[:1].isdigit() else var


def reference(value: Any, var: str) -> str | None:
    """None when `value` already takes its secret from Kit's environment (only `${VAR}` references,
    after an optional auth scheme); else the `${var}` reference kit.yaml gets in its place."""
    if isinstance(value, str):
        scheme = _SCHEME.match(value)
        rest = value[scheme.end():] if scheme else value
        if _REF.search(rest) and not _REF.sub("", rest).strip():
            return None
        return f"{scheme.group(0) if scheme else ''}${{{var}}}"
    return f"${{{var}}}"


def _secrets_as_references(name: str, kind: str, values: Mapping[str, Any], replaced: list[tuple[str, str]]) -> dict[str, str]:
    """`env`/`headers` with every literal value replaced by a reference (env: named after its key,
    which is what the server reads; headers: `<SERVER>_<HEADER>`, so two servers do not share one)."""
    out: dict[str, str] = {}
    for key, value in values.items():
        var = _variable(str(key)) if kind == "env" else _variable(f"{name}_{key}").upper()
        ref = reference(value, var)
        out[str(key)] = value if ref is None else ref
        if ref is not None:
            replaced.append((f"{kind}.{key}", var))
    return out


def _transport(spec: Mapping[str, Any]) -> str | None:
    """The transport the entry names (`transport`, or the CLI-native `type`), lower case."""
    named = spec.get("transport", spec.get("type"))
    return str(named).lower() if named is not None else None


def _shape_problem(spec: Mapping[str, Any]) -> str | None:
    """Why the entry is neither a stdio nor an HTTP server Kit can take, or None."""
    command, url, transport = spec.get("command"), spec.get("url"), _transport(spec)
    if command and url:
        return "it has both 'command' and 'url' (a Kit server is one or the other; OpenClaw refuses both too)"
    if not command and not url:
        return "it has neither 'command' nor 'url'"
    if transport is not None and transport not in STDIO | HTTP:
        return f"transport {transport!r} is not one Kit speaks (stdio, streamable HTTP)"
    if (transport in STDIO and url) or (transport in HTTP and command):
        return f"transport {transport!r} does not fit its {'url' if url else 'command'}"
    return None


def token_like(segment: str) -> bool:
    """Whether a URL path segment looks like a token rather than a name: a well-known token prefix,
    or 20+ letters and digits (and - _) with both kinds, in mixed case, all hex, or a quarter digits
    ("server-everything-2025" is a name; "NjQ3ZmE1YjgtMGU4Mi00", a UUID or a sha1 are tokens)."""
    if _TOKEN_PREFIX.match(segment):
        return True
    if len(segment) < 20 or not re.fullmatch(r"[A-Za-z0-9_-]+", segment):
        return False
    letters, digits = sum(c.isalpha() for c in segment), sum(c.isdigit() for c in segment)
    if not letters or not digits:
        return False
    mixed_case = any(c.islower() for c in segment) and any(c.isupper() for c in segment)
    return mixed_case or bool(re.fullmatch(r"[0-9a-fA-F-]+", segment)) or digits * 4 >= letters + digits


def _split(url: str):  # noqa: ANN202 - urllib's SplitResult
    """`url` split; without a scheme ("localhost:3000/mcp") the host is not read as the path."""
    parts = urlsplit(url)
    return parts if parts.netloc or "://" in url else urlsplit(f"//{url}")


def url_secret_parts(url: str) -> list[str]:
    """What in `url` may be a secret Kit cannot take from its environment, by name (never the value):
    "url query string (api_key)", "url path segment 3", "url fragment"."""
    parts = _split(url)
    segments = [segment for segment in parts.path.split("/") if segment]
    found = [f"url path segment {n}" for n, segment in enumerate(segments, start=1) if token_like(segment)]
    if parts.query:
        keys = ", ".join(dict.fromkeys(k.partition("=")[0] for k in re.split(r"[&;]", parts.query) if k))
        found.append(f"url query string ({keys})" if keys and len(keys) <= 60 else "url query string")
    if parts.fragment:
        found.append("url fragment")
    return found


def shown_url(url: str) -> str:
    """`url` fit for a report: no user:password, no query or fragment, no token-like path segment."""
    parts = _split(url)
    netloc = "…@" + parts.netloc.rpartition("@")[2] if "@" in parts.netloc else parts.netloc
    path = "/".join("…" if token_like(s) else s for s in parts.path.split("/"))
    shown = urlunsplit((parts.scheme, netloc, path, "…" if parts.query else "", "…" if parts.fragment else ""))
    return shown if parts.scheme or "://" in url else shown.removeprefix("//")


def secret_args(args: list[str]) -> list[str]:
    """The `args` items that may be secrets, by key path: the value after a flag named like a secret
    (`--token X`: "args[1] (after --token)") or in it (`--token=X`: "args[0] (--token=…)")."""
    found = []
    for n, arg in enumerate(args):
        flag, eq, value = arg.partition("=")
        if eq and _SECRET_FLAG.match(flag) and value and not _only_references(value):
            found.append(f"args[{n}] ({flag}=…)")
        elif (not eq and _SECRET_FLAG.match(arg) and n + 1 < len(args) and not args[n + 1].startswith("-")
              and not _only_references(args[n + 1])):
            found.append(f"args[{n + 1}] (after {arg})")
    return found


def _words(value: Any) -> list[str]:
    """A command line's words: a list's strings and numbers (anything else as ""), a string split
    at spaces (a command "srv --token X") and, for args, commas (Kit reads `args: "a, b"` as a list)."""
    if isinstance(value, list):
        return [str(a) if isinstance(a, str | int | float) and not isinstance(a, bool) else "" for a in value]
    return [w for w in re.split(r"[\s,]+", value) if w] if isinstance(value, str) else []


def _command_line_secrets(entry: Mapping[str, Any]) -> list[str]:
    """`secret_args` of the entry's args, then of its command's words (as "command (after --token)")."""
    found = secret_args(_words(entry.get("args")))
    found += [f"command {item.partition(' ')[2]}" for item in secret_args(_words(entry.get("command")))]
    return found


def _only_references(value: str) -> bool:
    """A value made only of `${VAR}` references holds no secret itself."""
    return bool(_REF.search(value)) and not _REF.sub("", value).strip()


def convert_server(name: str, spec: Any, dialect: Dialect) -> tuple[dict[str, Any] | None, list[str]]:
    """One server as Kit's entry (None: not imported) and the report lines for it."""
    where = f"mcp server {name}"
    if not isinstance(spec, dict):
        return None, [f"{where} in {dialect.origin} is {kind_of(spec, dialect.mapping)}, not {dialect.mapping}: "
                      "not imported"]
    problem = _shape_problem(spec)
    if problem:
        return None, [f"{where}: not imported: {problem}; fix it in {dialect.origin} and import again"]
    notes: list[str] = []
    entry: dict[str, Any] = {}
    replaced: list[tuple[str, str]] = []
    dropped: list[str] = []
    for key, value in spec.items():
        kit_key = dialect.renamed.get(key, key)
        if key in ("transport", "type"):
            if _transport(spec) == "sse":
                notes.append(f"{where}: {dialect.origin} says SSE; Kit speaks streamable HTTP only, so if the "
                             "server offers only SSE it will not connect")
        elif kit_key in ("env", "headers"):
            if not isinstance(value, dict):  # refused here: Kit's own message would quote the value
                return None, [f"{where}: not imported: {key} is {kind_of(value, dialect.mapping)}, not {dialect.mapping}"]
            entry[kit_key] = _secrets_as_references(name, kit_key, value, replaced)
        elif kit_key == "args" and isinstance(value, list) and all(isinstance(a, str | int | float) and
                                                                   not isinstance(a, bool) for a in value):
            entry["args"] = [str(a) for a in value]  # `--port 8080` in YAML gives a number
        elif key in dialect.seconds and isinstance(value, int | float) and not isinstance(value, bool):
            kit_timeout, factor = dialect.seconds[key]
            entry[kit_timeout] = value * factor
        elif kit_key in ("command", "cwd", "url", "enabled", "args"):
            entry[kit_key] = value  # a wrong type is Kit's loader's to name, below
        else:
            dropped.append(str(key))
    url = entry.get("url")
    secrets = url_secret_parts(url) if isinstance(url, str) else []
    if secrets:
        return None, [f"{where}: not imported: {' and '.join(secrets)} may hold a secret, and Kit "
                      "does not expand ${VAR} in an MCP url (only in env and headers), so kit.yaml could "
                      f"only hold it as is; move the secret to a header if the server takes one, and add "
                      f"the server to kit.yaml by hand (the url is in {dialect.origin})"]
    secrets = _command_line_secrets(entry)
    if secrets:
        return None, [f"{where}: not imported: {', '.join(secrets)} may hold a secret, and Kit does not "
                      "expand ${VAR} in command or args (only in env and headers), so kit.yaml could only "
                      "hold it as is; pass it in env if the server reads it from there, and add the server "
                      f"to kit.yaml by hand (the value is in {dialect.origin})"]
    if isinstance(url, str) and "@" in urlsplit(url).netloc:
        parts = urlsplit(url)
        entry["url"] = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        notes.append(f"{where}: the user and password in its url are not copied (a secret); send them as an "
                     f"Authorization header read from ${{{_variable(f'{name}_AUTHORIZATION').upper()}}}")
    if replaced:
        shown = ", ".join(f"{path} from ${{{var}}}" for path, var in replaced)
        names = ", ".join(dict.fromkeys(var for _, var in replaced))
        notes.append(f"{where}: literal values may be secrets and are not copied; kit.yaml reads {shown}: set "
                     f"{names} in Kit's environment (the value{'s are' if len(replaced) > 1 else ' is'} in "
                     f"{dialect.origin})")
    if dropped:
        notes.append(f"{where}: {', '.join(dropped)} not imported (Kit has no such setting)")
    problems = kit_problems(("mcp", "servers", name), entry)
    if problems:
        return None, [*notes, f"{where}: not imported: {'; '.join(problems)}"]
    return entry, notes


def convert_servers(servers: Mapping[str, Any], dialect: Dialect) -> tuple[dict[str, Any], list[str]]:
    """Every server Kit can take, and the report lines for all of them."""
    kept: dict[str, Any] = {}
    notes: list[str] = []
    for name, spec in servers.items():
        entry, said = convert_server(str(name), spec, dialect)
        notes.extend(said)
        if entry is not None:
            kept[str(name)] = entry
    return kept, notes


def kit_values(values: Mapping[str, Any], names: Mapping[str, str], servers: Mapping[str, Any],
               dialect: Dialect) -> tuple[dict[str, Any], list[str]]:
    """What an import writes to kit.yaml: `values` that Kit's loader takes (`names`: the key each
    came from) with the servers Kit can take as `mcp.servers`, and the report lines for the rest."""
    out, notes = checked(values, dialect.origin, names)
    kept, server_notes = convert_servers(servers, dialect)
    if kept:
        out["mcp.servers"] = kept
    return out, [*notes, *server_notes]
