"""Static security scan of a skill (§5): scripts/ and any other code file in the folder, and the
code in SKILL.md itself (fenced code blocks and Claude Code's `` !`cmd` `` lines).

Rules are plain regular expressions over lines, plus whole-file rules for sending secrets: a
credential file (`~/.ssh`, `.aws/credentials` …) read anywhere in a file that sends anything
anywhere, the environment dumped and sent, or an API key sent to a host that is not its API's
(an OpenAI key posted to api.openai.com is a plain client; to webhook.site it is exfiltration).
A `critical` finding keeps the skill out of the prompt until the user trusts that exact code
(`kit skills trust NAME`, by content hash). SKILL.md prose — an inline `curl … | sh` in a
sentence — is documentation and not scanned; a fenced block is what a reader (or an agent) is
told to run, which is how the "prerequisites" attacks on public skill registries ship, so it is,
with the rules that matter there (critical ones, obfuscation, paste sites).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kit.documents import Document
from kit.errors import DocumentError
from kit.fsutil import atomic_write, file_stamp, is_within, looks_binary, read_bytes, sha256_hex
from kit.ignore import IGNORED_DIRS
from kit.lazyre import LazyPattern, lazy
from kit.problems import Problem

CODE_SUFFIXES = frozenset(
    {".py", ".sh", ".bash", ".zsh", ".fish", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php",
     ".lua", ".ps1", ".bat", ".cmd", ".go", ".rs"}
)
MAX_SCAN_BYTES = 1024 * 1024  # a bigger "script" is itself suspicious; reported, not read
MAX_FILES = 2000

SEVERITIES = ("critical", "high", "medium", "low")
# findings that block even a trusted skill (ScanResult.untrustable): rule -> (why trust cannot lift
# it, said after the finding's excerpt; what the user does instead), the one wording of every
# message about such a block (Skill.block_reason, Skill.unblock_hint)
UNTRUSTABLE: Mapping[str, tuple[str, str]] = MappingProxyType({
    "symlink-escape": ("resolves outside the skill folder, and trust covers only what is inside it",
                       "copy what the link points at into the skill folder or remove the link"),
    "too-many-files": (f"lies past the {MAX_FILES:,} code files Kit scans and pins, so trust cannot cover it",
                       "split the skill or remove files"),
})
UNTRUSTABLE_RULES = frozenset(UNTRUSTABLE)


def finding(rule: str, severity: str, rel: str, line: int, message: str, excerpt: str) -> Problem:
    """A scan finding: a Problem graded critical | high | medium | low, at a path relative to the
    skill folder; `details` carry the rule id and the offending line."""
    return Problem(area="skills", severity=severity, path=rel, line=line, message=message,
                   details={"rule": rule, "excerpt": excerpt})


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    pattern: LazyPattern
    message: str


def _r(pattern: str, flags: int = re.I) -> LazyPattern:
    # compiled at first use: a cold `kit prompt` whose scans all come from the disk cache never
    # runs a rule, and compiling them took ~15 ms of its start
    return lazy(pattern, flags)


RULES: tuple[Rule, ...] = (
    Rule("pipe-to-shell", "critical",
         _r(r"\b(curl|wget|fetch|iwr|invoke-webrequest)\b[^|\n]*\|\s*(sudo\s+)?(ba|z|da|k)?sh\b"
            r"|\b(curl|wget)\b[^|\n]*\|\s*(sudo\s+)?(python3?|perl|ruby|node)\b"),
         "downloads code and pipes it straight into an interpreter"),
    Rule("decode-and-run", "critical",
         _r(r"\b(exec|eval)\s*\(\s*(base64\.b64decode|codecs\.decode|bytes\.fromhex|atob|zlib\.decompress)"
            r"|base64\s+(-d|--decode)[^|\n]*\|\s*(ba|z)?sh\b"),
         "decodes hidden data and executes it"),
    Rule("crypto-mining", "critical",
         _r(r"stratum\+(tcp|ssl)://|\bxmrig\b|\bcryptonight\b|\bminerd\b|\bcoinhive\b|\bnicehash\b|\bethminer\b"),
         "crypto-mining software or pool"),
    Rule("shell-rc-persistence", "critical",
         _r(r"(>>?|\btee\b(\s+-a)?|open\s*\(|write|append|appendFile)[^\n]*"
            r"\.(bashrc|zshrc|bash_profile|zprofile|profile|bash_login|config/fish/config\.fish)\b"
            r"|\.(bashrc|zshrc|bash_profile|zprofile|profile)\b[^\n]*(>>|open\s*\([^)]*['\"]a)"),
         "writes into a shell startup file (persistence)"),
    Rule("dynamic-code", "high",
         _r(r"(?<![\w.])(eval|exec)\s*\(|\b__import__\s*\(|\bnew\s+Function\s*\(|^[^\S\n]*eval\s+[\"'$]",
            re.M),
         "dynamic code execution"),
    Rule("obfuscated-blob", "high",
         _r(r"[A-Za-z0-9+/]{200,}={0,2}|(?:[0-9a-fA-F]{2}){120,}|(?:\\x[0-9a-fA-F]{2}){40,}", 0),
         "long encoded blob (possible obfuscated payload)"),
    Rule("reverse-shell", "critical",
         _r(r"/dev/(tcp|udp)/[\w.\-]+/\d+|\b(nc|ncat|netcat)\b[^\n]*\s-(e|c)\s|\bsocat\b[^\n]*\bexec:"
            r"|\bmkfifo\b[^\n]*\b(nc|ncat)\b|socket\.socket\([^\n]*\.connect\(\([^\n]*(subprocess|os\.dup2|pty\.spawn)"
            r"|\bos\.dup2\s*\(\s*\w+\.fileno\(\)"),
         "opens a reverse shell (hands a shell to a remote host)"),
    Rule("paste-site", "high",
         _r(r"\b(glot\.io|pastebin\.com|paste\.ee|hastebin\.com|rentry\.co|ghostbin\.\w+|transfer\.sh)\b"),
         "fetches from or sends to a paste site (how malicious skills ship their second stage)"),
    Rule("shell-exec", "medium",
         _r(r"\bsubprocess\.(run|call|Popen|check_output|check_call)\b|\bos\.(system|popen|exec[lv]p?e?)\s*\("
            r"|\bchild_process\b|\bshell\s*=\s*True\b"),
         "runs shell commands"),
)

# --- sending secrets: whole-file signals -------------------------------------------------------
_CREDENTIAL_FILE = _r(
    r"\.ssh/|\bid_(rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|\.netrc\b|\.git-credentials|/etc/shadow"
    r"|\.kube/config|\.gnupg\b|\bkeychain\b|\.docker/config\.json|\.openclaw/|\.clawdbot/|\.config/gh/hosts"
)
_SECRET_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_ENV_READ = lazy(
    rf"""os\.environ\s*(?:\[\s*|\.get\(\s*)['"]({_SECRET_NAME})['"]|getenv\(\s*['"]({_SECRET_NAME})['"]"""
    rf"""|process\.env\.({_SECRET_NAME})|process\.env\[\s*['"]({_SECRET_NAME})['"]|ENV\[\s*['"]({_SECRET_NAME})['"]"""
    rf"""|\$\{{?([A-Z][A-Z0-9_]*)\}}?"""
)
_SECRETISH = lazy(r"KEY|TOKEN|SECRET|PASSW|CRED|AUTH|BEARER|PAT\b|SESSION", re.I)
_ENV_DUMP = _r(
    r"\bprintenv\b|^[^\S\n]*env\s*(\||>|$)|\b(dict|str|json\.dumps|repr)\(\s*(dict\()?os\.environ\b"
    r"|os\.environ\.(items|copy)\(\)\s*[,)]?\s*$|JSON\.stringify\(\s*process\.env\s*\)"
    r"|Object\.(entries|keys|values)\(\s*process\.env\s*\)|\benv\s*\|\s*(curl|nc|base64)", re.I | re.M,
)
_NETWORK_SEND = _r(
    r"\brequests\.(post|put|get|patch|request)\b|\bhttpx\.(post|put|get|patch|request|Client)\b|urllib\.request"
    r"|urlopen\s*\(|\bfetch\s*\(|\bcurl\b|\bwget\b|\bsocket\.(socket|create_connection)|\bnc\s+-?\w*\s*\S+\s+\d+"
    r"|axios(\.(post|get|put|request))?\s*\(|XMLHttpRequest|\bhttp\.client\b|aiohttp\.ClientSession|Invoke-WebRequest"
)
_HOST = lazy(r"\b(?:https?|wss?)://([A-Za-z0-9.\-]+)(?::\d+)?", re.I)
_IP_HOST = lazy(r"^\d{1,3}(?:\.\d{1,3}){3}$")
# where stolen data goes: request catchers, tunnels, chat webhooks, paste sites
EXFIL_HOSTS = ("webhook.site", "requestbin", "pipedream.net", "ngrok", "hookbin", "beeceptor", "interact.sh",
               "oast.", "burpcollaborator", "discord.com", "discordapp.com", "hooks.slack.com", "telegram.org",
               "pastebin.com", "glot.io", "transfer.sh", "paste.ee")
# a key's name -> the hosts of its API, where the name alone does not say (GEMINI_API_KEY -> googleapis.com)
KEY_HOSTS = {"gemini": ("googleapis.com",), "google": ("googleapis.com",), "gcp": ("googleapis.com",),
             "hf": ("huggingface.co",), "huggingface": ("huggingface.co",), "claude": ("anthropic.com",),
             "gh": ("github.com",), "aws": ("amazonaws.com",), "azure": ("azure.com", "microsoft.com"),
             "openai": ("openai.com", "openai.azure.com")}
_NAME_NOISE = frozenset({"api", "key", "keys", "token", "tokens", "secret", "access", "auth", "password", "pass",
                         "client", "private", "personal", "bearer", "pat", "id", "env", "app", "the"})


def _hosts(text: str) -> list[str]:
    return sorted({m.group(1).lower().rstrip(".") for m in _HOST.finditer(text)})


def _suspicious(host: str) -> bool:
    return bool(_IP_HOST.match(host)) and not host.startswith("127.") or any(h in host for h in EXFIL_HOSTS)


def vendor_words(name: str) -> list[str]:
    """The words of a key's name that may name its vendor: OPENAI_API_KEY -> ["openai"]."""
    return [w for w in re.split(r"[_\W]+", name.lower()) if w and w not in _NAME_NOISE]


def key_matches_host(name: str, host: str) -> bool:
    """Whether the API key `name` (OPENAI_API_KEY) belongs to `host` (api.openai.com): a word of
    the name in the host, or a known pairing (GEMINI_API_KEY → googleapis.com)."""
    for word in vendor_words(name):
        if any(host == h or host.endswith("." + h) for h in KEY_HOSTS.get(word, ())):
            return True
        if len(word) >= 3 and word in host:
            return True
    return False


def _secret_findings(text: str, rel: str, lines: list[str]) -> list[Problem]:
    """The whole-file rules: credential files, dumped environment, keys sent to another host."""
    sends = [n for n, line in enumerate(lines, start=1) if _NETWORK_SEND.search(line)]
    if not sends:
        return []
    first_send = sends[0]
    # hosts the code talks to: a project URL in a comment is not a destination
    hosts = _hosts("\n".join(line for line in lines if not line.strip().startswith(("#", "//", "*", "/*", "<!--"))))
    for number, line in enumerate(lines, start=1):
        match = _CREDENTIAL_FILE.search(line)
        if match:
            return [finding("secret-exfiltration", "critical", rel, first_send,
                            f"reads a credential file ({match.group(0).strip()}, line {number}) and sends data over "
                            "the network", _excerpt(lines[first_send - 1]))]
    for number, line in enumerate(lines, start=1):
        if _ENV_DUMP.search(line):
            return [finding("secret-exfiltration", "critical", rel, first_send,
                            f"collects the whole environment (line {number}) and sends data over the network",
                            _excerpt(lines[first_send - 1]))]
    keys: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        for match in _ENV_READ.finditer(line):
            name = next(g for g in match.groups() if g)
            if _SECRETISH.search(name):
                keys.setdefault(name, number)
    if not keys:
        return []
    bad = [h for h in hosts if _suspicious(h)]
    vendored = [k for k in keys if vendor_words(k)]
    if not bad and vendored:
        bad = [h for h in hosts if not any(key_matches_host(k, h) for k in vendored) and not h.startswith(
            ("localhost", "127."))]
    name, line_no = next(iter(keys.items()))
    if not bad and hosts and not vendored:
        # API_KEY, $TOKEN: no vendor in the name, so Kit cannot tell whose API the host is
        return [finding("secret-send", "high", rel, first_send,
                        f"reads {name} (line {line_no}) and sends data to {hosts[0]}; the key's name does not "
                        "say whose it is", _excerpt(lines[first_send - 1]))]
    if bad:
        return [finding("secret-exfiltration", "critical", rel, first_send,
                        f"reads {name} (line {line_no}) and sends data to {bad[0]}, which is not that key's API",
                        _excerpt(lines[first_send - 1]))]
    if not hosts:
        return [finding("secret-send", "high", rel, first_send,
                        f"reads {name} (line {line_no}) and sends data to a host the code does not name",
                        _excerpt(lines[first_send - 1]))]
    return []  # a key sent to its own API: a plain client


# a stamp taken this soon after a change cannot see a same-size edit within the clock's tick (file
# times are coarse: a jiffy locally, up to seconds on network and FAT filesystems): rescan instead
RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class FolderStamp:
    """The stat of every folder and file a skill's scan looks at, so a later build knows the folder
    is unchanged without reading it: adding, removing or renaming a file changes its folder's
    mtime; an edit changes the file's size or mtime and always its ctime (which nothing can set
    back). Compared like git's index, including its "racily clean" rule (RACY_NS). A symlink is
    stamped twice: the link itself (in `entries`) and what it leads to (in `targets`: the real
    path and the stat through the link, so a link chain pointed elsewhere or an edited target shows)."""

    entries: tuple[tuple[str, int, int, int, int], ...]  # (path, mtime_ns, ctime_ns, size, inode)
    racy: bool
    targets: tuple[tuple[str, str, int, int, int, int], ...] = ()  # (link, real path, mtime_ns, ctime_ns, size, inode)

    def unchanged(self) -> bool:
        if self.racy:
            return False
        for path, *recorded in self.entries:
            try:
                st = os.lstat(path)
            except OSError:
                return False
            if (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino) != tuple(recorded):
                return False
        for link, real, *recorded in self.targets:
            if os.path.realpath(link) != real or _target_stat(link) != tuple(recorded):
                return False
        return True


def _target_stat(link: str) -> tuple[int, int, int, int]:
    """The stat of what a link leads to (-1s when it leads nowhere)."""
    try:
        return file_stamp(os.stat(link))
    except OSError:
        return (-1, -1, -1, -1)


class _Stamper:
    """Collects the stamp of the paths it is shown, in order."""

    def __init__(self) -> None:
        self.settled_before = time.time_ns() - RACY_NS  # the filesystem's clock, not KIT_NOW: file times
        self.entries: list[tuple[str, int, int, int, int]] = []
        self.targets: list[tuple[str, str, int, int, int, int]] = []
        self.racy = False

    def lstat(self, path: str) -> os.stat_result | None:
        try:
            st = os.lstat(path)
        except OSError:
            self.entries.append((path, -1, -1, -1, -1))  # never matches
            return None
        self.entries.append((path, *file_stamp(st)))
        self.racy = self.racy or max(st.st_mtime_ns, st.st_ctime_ns) >= self.settled_before
        return st

    def target(self, link: str, real: str) -> None:
        """Stamp what the link leads to (its real path, and the stat through it)."""
        st = _target_stat(link)
        self.targets.append((link, real, *st))
        self.racy = self.racy or max(st[0], st[1]) >= self.settled_before

    def stamp(self) -> FolderStamp:
        return FolderStamp(tuple(self.entries), self.racy, tuple(self.targets))


def stamp_paths(paths: list[str]) -> FolderStamp:
    """The stamp of these paths now (take it before reading them)."""
    stamper = _Stamper()
    for path in paths:
        stamper.lstat(path)
    return stamper.stamp()


@dataclass(frozen=True)
class Inventory:
    """One walk of a skill folder (see `inventory`)."""

    stamp: FolderStamp
    files: tuple[str, ...]  # the code files, relative POSIX paths, sorted (symlinks among them)
    links: Mapping[str, str]  # every symlink met: relative path -> what it points at (as written)
    problems: tuple[Problem, ...]  # symlinks that lead out of the folder or to nothing; too many files


def _link_problem(rel: str, target: str, real: str, inside: bool) -> Problem:
    shown = f" ({real})" if real != target else ""
    if not inside:
        return finding("symlink-escape", "critical", rel, 1,
                       f"symlink -> {target}{shown} resolves outside the skill folder: Kit scans and trusts only what "
                       f"is inside it, so `kit skills trust` cannot lift this; {UNTRUSTABLE['symlink-escape'][1]}",
                       f"{rel} -> {target}")
    return finding("symlink-dangling", "high", rel, 1,
                   f"symlink -> {target} points at nothing (a broken link or a loop)", f"{rel} -> {target}")


def _too_many_files(rel: str) -> Problem:
    return finding("too-many-files", "critical", rel, 1,
                   f"the skill has more than {MAX_FILES:,} code files; Kit scans and pins at most {MAX_FILES:,} "
                   f"(this one and those after it are not), so it cannot vouch for the rest: "
                   f"{UNTRUSTABLE['too-many-files'][1]}", rel)


def _is_code(name: str, in_scripts: bool, full: str) -> bool:
    if in_scripts or os.path.splitext(name)[1].lower() in CODE_SUFFIXES:
        return True
    try:
        with open(full, "rb") as handle:
            return handle.read(2).startswith(b"#!")
    except OSError:
        return False


def inventory(skill_dir: Path) -> Inventory:
    """One walk of a skill folder: its stamp — every folder walked and every file in them (a README
    that gains a shebang becomes code), taken before any file is read — and its code files
    (relative POSIX paths, sorted): everything under scripts/ plus code elsewhere (by suffix or
    shebang), never SKILL.md.

    Symlinks: one that resolves outside the skill folder (or whose target is missing outside it)
    is a critical `symlink-escape` finding, never followed or read; one that points at nothing
    inside is a `symlink-dangling` finding. A link to a file inside is code by the same rules as a
    file (its own path, or its target's `#!`) and is read through, so it is scanned and hashed by
    its target's bytes; a link to a folder inside is walked under its own name (each real folder at
    most once as scripts/ and once not, so a loop ends). Each link is stamped with what it leads to
    (`FolderStamp.targets`), so an unchanged skill with links is still served from the caches.

    At most MAX_FILES code files are listed (scanned and pinned); one more is a critical
    `too-many-files` finding that trust cannot lift, and the walk goes on past the cap, stamping
    every entry and checking every link, so nothing escapes behind it."""
    base = os.fspath(skill_dir)
    real_base: str | None = None  # resolved when the first link is met: a folder without links never is
    stamper = _Stamper()
    found: list[str] = []
    links: dict[str, str] = {}
    problems: list[Problem] = []
    # (path, relative folder with a trailing "/", its place in the real skill folder, "" for the
    # top); link folders wait until the folders themselves are walked, so a file is named by its
    # real place when both lead to it
    stack: list[tuple[str, str, str]] = [(base, "", "")]
    aliases: list[tuple[str, str, str]] = []
    visited: set[tuple[str, bool]] = set()
    over: str | None = None  # the first code file past MAX_FILES

    def code(rel: str, name: str, in_scripts: bool, full: str) -> None:
        nonlocal over
        if over is not None or not _is_code(name, in_scripts, full):
            return  # past the cap and reported: no file is opened for its #! any more
        if len(found) < MAX_FILES:
            found.append(rel)
        else:
            over = rel

    top = stamper.lstat(base)  # a folder below is stamped as an entry of its parent, a link with its target
    if top is not None and stat.S_ISLNK(top.st_mode):  # the skill folder is a link: stamp the folder itself
        real_base = os.path.realpath(base)
        stamper.target(base, real_base)
    while stack or aliases:
        dirpath, rel_dir, real_rel = stack.pop() if stack else aliases.pop(0)
        in_scripts = rel_dir.startswith("scripts/")
        if (real_rel, in_scripts) in visited:
            continue
        visited.add((real_rel, in_scripts))
        try:
            with os.scandir(dirpath) as listing:
                names = sorted(entry.name for entry in listing)
        except OSError:
            continue
        subdirs: list[tuple[str, str, str]] = []
        for name in names:
            full = os.path.join(dirpath, name)
            rel = rel_dir + name
            st = stamper.lstat(full)
            if st is None:
                continue
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(full)
                except OSError:
                    target = "?"
                links[rel] = target
                real = os.path.realpath(full)
                stamper.target(full, real)
                if real_base is None:
                    real_base = os.path.realpath(base)
                inside = real == real_base or real.startswith(real_base.rstrip(os.sep) + os.sep)
                try:
                    target_st = os.stat(full) if inside else None
                except OSError:
                    target_st = None
                if target_st is None:
                    problems.append(_link_problem(rel, target, real, inside))
                    continue
                if stat.S_ISDIR(target_st.st_mode):
                    if name not in IGNORED_DIRS:
                        where = os.path.relpath(real, real_base).replace(os.sep, "/")
                        aliases.append((full, rel + "/", "" if where == "." else where + "/"))
                    continue
                if stat.S_ISREG(target_st.st_mode) and rel != "SKILL.md":
                    code(rel, name, in_scripts, full)
                continue
            if stat.S_ISDIR(st.st_mode):
                if name not in IGNORED_DIRS:
                    subdirs.append((full, rel + "/", real_rel + name + "/"))
                continue
            if not stat.S_ISREG(st.st_mode) or (name == "SKILL.md" and real_rel == ""):  # a fifo …
                continue
            code(rel, name, in_scripts, full)
        stack.extend(reversed(subdirs))  # depth first, in name order
    if over is not None:
        problems.append(_too_many_files(over))
    problems.sort(key=lambda f: f.path or "")
    return Inventory(stamper.stamp(), tuple(sorted(found)), MappingProxyType(links), tuple(problems))


def code_files(skill_dir: Path) -> list[str]:
    """The code files of a skill (see `inventory`)."""
    return list(inventory(skill_dir).files)


def _excerpt(line: str) -> str:
    line = line.strip()
    return line if len(line) <= 160 else line[:157] + "..."


MARKDOWN_RULES = frozenset({"pipe-to-shell", "decode-and-run", "crypto-mining", "shell-rc-persistence",
                            "reverse-shell", "paste-site", "obfuscated-blob"})
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_INJECTION = re.compile(r"!`([^`]+)`")


def markdown_code(text: str) -> list[tuple[int, str]]:
    """(line number, text) of the code in a Markdown file: lines inside fenced blocks and the
    commands of Claude Code's dynamic context `` !`cmd` `` (which would run when the skill loads)."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)[0] * len(match.group(1))
            continue
        if fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            else:
                out.append((number, line))
            continue
        for injected in _INJECTION.finditer(line):
            out.append((number, injected.group(1)))
    return out


def scan_text(text: str, rel: str) -> list[Problem]:
    """Findings for one file's text (line numbers 1-based); a `.md` file is scanned for its code."""
    if rel.lower().endswith(".md"):
        return scan_markdown(text, rel)
    findings: list[Problem] = []
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        for rule in RULES:
            if rule.pattern.search(line):
                findings.append(finding(rule.id, rule.severity, rel, number, rule.message, _excerpt(line)))
    findings.extend(_secret_findings(text, rel, lines))
    return findings


def scan_markdown(text: str, rel: str) -> list[Problem]:
    code = markdown_code(text)
    if not code:
        return []
    findings: list[Problem] = []
    for number, line in code:
        for rule in RULES:
            if rule.id in MARKDOWN_RULES and rule.pattern.search(line):
                findings.append(finding(rule.id, rule.severity, rel, number, f"{rule.message} (in a code block)",
                                        _excerpt(line)))
    # the secret rules over the code alone, mapped back to the file's lines
    joined = [line for _n, line in code]
    for item in _secret_findings("\n".join(joined), rel, joined):
        findings.append(replace(item, line=code[(item.line or 1) - 1][0]))
    return findings


# --------------------------------------------------------------------------- the scan cache

SCANNER_VERSION = 6  # bump when the scan's logic changes; rule changes are caught by SCANNER_KEY anyway


def _scanner_key() -> str:
    """Names this scanner: its version and every rule (id, severity, pattern, message), so a cache
    written by another scanner (rules added or edited) is never trusted."""
    parts = [str(SCANNER_VERSION), _CREDENTIAL_FILE.pattern, _ENV_READ.pattern, _ENV_DUMP.pattern,
             _NETWORK_SEND.pattern, ",".join(EXFIL_HOSTS), json.dumps(KEY_HOSTS, sort_keys=True),
             ",".join(sorted(MARKDOWN_RULES))]
    parts += [f"{r.id}\0{r.severity}\0{r.pattern.pattern}\0{r.pattern.flags}\0{r.message}" for r in RULES]
    return sha256_hex("\n".join(parts))[:16]


SCANNER_KEY = _scanner_key()


def _folder_key(skill_dir: Path) -> str:
    return "folder:" + os.fspath(skill_dir)  # never a file entry's key ("<sha256>:<path>")
CACHE_ENTRIES = 20_000  # a bound on the cache file; the oldest entries go first


class ScanCache:
    """Findings of code files by (path in the skill, sha256 of the bytes), kept in a JSON file so a
    new process never re-scans an unchanged skill, and each skill folder's whole scan by its
    FolderStamp, so while the folder's stat holds it is not even read (a file that changed is read
    and hashed again, and only its rules' pass is skipped when its bytes were seen). Workspace skills keep theirs in
    `.kit/cache/`, user and bundled skills in the user cache dir. `path=None` keeps it in memory."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self._entries: dict[str, list[dict[str, Any]]] | None = None
        self.dirty = False
        self.hits = self.misses = 0

    def _load(self) -> dict[str, list[dict[str, Any]]]:
        if self._entries is None:
            self._entries = {}
            if self.path is not None:
                try:
                    data = json.loads(self.path.read_text(encoding="utf-8"))
                    if data.get("scanner") == SCANNER_KEY and isinstance(data.get("entries"), dict):
                        self._entries = data["entries"]
                except (OSError, ValueError, AttributeError):
                    pass  # missing or damaged: derived data, scanned again
        return self._entries

    def findings(self, raw: bytes, rel: str) -> tuple[Problem, ...]:
        """scan_text of these bytes, from the cache when they were scanned before."""
        entries = self._load()
        key = f"{sha256_hex(raw)}:{rel}"
        hit = entries.get(key)
        if hit is not None:
            try:
                found = tuple(finding(f["rule"], f["severity"], rel, int(f["line"]), f["message"], f["excerpt"])
                              for f in hit)
                self.hits += 1
                return found
            except (TypeError, KeyError, ValueError):
                pass  # an entry of another shape: scan again
        self.misses += 1
        found = tuple(scan_text(raw.decode("utf-8", errors="replace"), rel))
        entries.pop(key, None)
        entries[key] = [{"rule": f.details["rule"], "severity": f.severity, "line": f.line,
                         "message": f.message, "excerpt": f.details["excerpt"]} for f in found]
        while len(entries) > CACHE_ENTRIES:
            entries.pop(next(iter(entries)))
        self.dirty = True
        return found

    def folder(self, skill_dir: Path) -> tuple[FolderStamp, ScanResult] | None:
        """The scan of a skill folder a process saved, when its stamp still holds: a new process
        then neither walks the folder nor reads or hashes a file of it, only stats them."""
        hit = self._load().get(_folder_key(skill_dir))
        if not isinstance(hit, dict):
            return None
        try:
            folder = FolderStamp(tuple(tuple(e) for e in hit["stamp"]), bool(hit["racy"]),
                                 tuple(tuple(e) for e in hit["targets"]))
            if not folder.unchanged():
                return None
            found = tuple(finding(f["rule"], f["severity"], f["path"], int(f["line"]), f["message"], f["excerpt"])
                          for f in hit["findings"])
            result = ScanResult(found, str(hit["digest"]), tuple(str(f) for f in hit["files"]))
        except (TypeError, KeyError, ValueError):
            return None  # an entry of another shape: scan again
        self.hits += 1
        return folder, result

    def remember_folder(self, skill_dir: Path, folder: FolderStamp, result: ScanResult) -> None:
        if folder.racy:
            return  # never trusted: the next process scans it and saves a settled stamp
        entries = self._load()
        key = _folder_key(skill_dir)
        entries.pop(key, None)
        entries[key] = {"stamp": [list(e) for e in folder.entries], "racy": False,
                        "targets": [list(e) for e in folder.targets], "digest": result.digest,
                        "files": list(result.files),
                        "findings": [{"rule": f.details["rule"], "severity": f.severity, "path": f.path,
                                      "line": f.line, "message": f.message, "excerpt": f.details["excerpt"]}
                                     for f in result.findings]}
        while len(entries) > CACHE_ENTRIES:
            entries.pop(next(iter(entries)))
        self.dirty = True

    def save(self) -> None:
        """Write the file if anything new was scanned (atomically; a failure only costs speed)."""
        if not self.dirty or self.path is None:
            return
        # another process may have written the file since this one read it (a long `kit watch`
        # holds its copy for hours): keep its entries too, ours winning
        on_disk = ScanCache(self.path)._load()
        entries = {**{k: v for k, v in on_disk.items() if k not in self._load()}, **self._load()}
        while len(entries) > CACHE_ENTRIES:
            entries.pop(next(iter(entries)))
        self._entries = entries
        with contextlib.suppress(OSError):
            atomic_write(self.path, json.dumps({"scanner": SCANNER_KEY, "entries": entries},
                                               ensure_ascii=False, separators=(",", ":")))
            self.dirty = False


@dataclass(frozen=True)
class ScanResult:
    findings: tuple[Problem, ...]
    digest: str  # sha256 over the code files' paths and bytes: what `trust` pins
    files: tuple[str, ...]  # the code files scanned, relative

    @property
    def critical(self) -> tuple[Problem, ...]:
        return tuple(f for f in self.findings if f.severity == "critical")

    @property
    def untrustable(self) -> tuple[Problem, ...]:
        """Findings that block the skill whatever trust says (UNTRUSTABLE: a symlink out of the
        folder, whose target is not the skill's, or code past the MAX_FILES the hash pins)."""
        return tuple(f for f in self.findings if f.details.get("rule") in UNTRUSTABLE_RULES)


def _stamped_text(known: Document | None, path: str, walked: Inventory) -> str | None:
    """`known`'s text when it is the version of `path` the walk stamped, else None: its stat before
    the read is the walk's, and that stat tells versions apart — the file had been still for
    RACY_NS when it was read (a same-size edit within the clock's tick leaves the stat as it was).
    Or the walk is racy itself: then this scan is neither saved nor reused, and serves only the
    build that holds `known` (the catalog's text of the skill is that very version)."""
    if known is None or known.stamp is None or (path, *known.stamp) not in walked.stamp.entries:
        return None
    settled = max(known.stamp[0], known.stamp[1]) < known.stamped_ns - RACY_NS
    return known.text if walked.stamp.racy or settled else None


def _skill_md_code(skill_dir: Path, walked: Inventory, known: Document | None) -> tuple[bytes, str] | None:
    """SKILL.md's bytes (a leading BOM dropped, as a Document's text has none) and the code in it,
    or None when it has none (or cannot be read). `known`: SKILL.md as the caller read it, used
    when it is the version the walk stamped (`_stamped_text`), so a folder's first scan does
    not read it a second time."""
    path = os.path.join(skill_dir, "SKILL.md")
    text = _stamped_text(known, path, walked)
    if text is not None:
        raw = text.encode("utf-8")
    else:
        try:  # never blocks on a FIFO; a read(MAX_SCAN_BYTES) cost 3x a plain read of a small file
            raw = read_bytes(path, max_bytes=MAX_SCAN_BYTES, cut=True).removeprefix(b"\xef\xbb\xbf")
        except DocumentError:
            return None
    if b"```" not in raw and b"~~~" not in raw and b"!`" not in raw:
        return None  # no fence, no `!`cmd``: what markdown_code would find in it is nothing
    code = markdown_code(raw.decode("utf-8", errors="replace"))
    if not code:
        return None
    return raw, "\n".join(f"{n}:{line}" for n, line in code)


def scan_skill(skill_dir: Path, cache: ScanCache | None = None, walked: Inventory | None = None,
               skill_md: Document | None = None) -> ScanResult:
    """Scan a skill folder's code and hash it (the digest changes whenever any code changes, and
    whenever a symlink is added, removed or pointed elsewhere). `walked`: the folder's
    `inventory` when the caller took it already; `skill_md`: its SKILL.md as the caller read it
    (used only when the walk stamped that version)."""
    cache = cache if cache is not None else ScanCache()
    walked = walked if walked is not None else inventory(skill_dir)
    digest = hashlib.sha256()
    findings: list[Problem] = list(walked.problems)
    scanned: list[str] = []
    code_in_md = _skill_md_code(skill_dir, walked, skill_md)
    if code_in_md is not None:  # SKILL.md's code blocks: scanned, and pinned by trust like a script
        raw, code = code_in_md
        scanned.append("SKILL.md")
        digest.update(b"SKILL.md#code\0" + code.encode("utf-8") + b"\0")
        findings.extend(cache.findings(raw, "SKILL.md"))
    files = set(walked.files)
    for rel in sorted(files | set(walked.links)):
        path = os.path.join(skill_dir, rel)
        link = walked.links.get(rel)
        pin = b"" if link is None else b"->" + os.fsencode(link) + b"\0"  # the link itself
        if rel not in files:  # a link that is not code (to a folder, out of the skill, to nothing)
            digest.update(rel.encode() + b"\0" + pin)
            continue
        if link is not None and not is_within(skill_dir, path):
            # pointed elsewhere since the walk: never read what lies outside
            findings.append(_link_problem(rel, link, os.path.realpath(path), False))
            digest.update(rel.encode() + b"\0" + pin)
            continue
        try:
            size = os.path.getsize(path)
            with open(path, "rb") as handle:
                raw = handle.read() if size <= MAX_SCAN_BYTES else b""
        except OSError:
            continue
        scanned.append(rel)
        digest.update(rel.encode() + b"\0" + pin + str(size).encode() + b"\0" + raw + b"\0")
        if size > MAX_SCAN_BYTES:
            findings.append(finding("oversized-code", "high", rel, 1,
                                        f"code file of {size:,} bytes was not scanned", ""))
            continue
        if looks_binary(raw):
            findings.append(finding("binary-code", "high", rel, 1,
                                        "binary file among the scripts cannot be reviewed", ""))
            continue
        findings.extend(cache.findings(raw, rel))
    order = {s: i for i, s in enumerate(SEVERITIES)}
    findings.sort(key=lambda f: (order.get(f.severity, 9), f.path, f.line, f.details["rule"]))
    return ScanResult(tuple(findings), digest.hexdigest(), tuple(scanned))
