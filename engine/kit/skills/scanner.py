"""Static security scan of a skill's code (§5): scripts/ and any other code file in the folder.

Rules are plain regular expressions over lines (plus one two-signal rule: reading secrets and
sending over the network within a few lines). A `critical` finding keeps the skill out of the
prompt until the user trusts that exact code (`kit skills trust NAME`, by content hash).
Markdown is not scanned: instructions that *mention* `curl … | sh` are documentation, not code.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.fsutil import atomic_write, looks_binary, sha256_hex
from kit.ignore import IGNORED_DIRS
from kit.problems import Problem

CODE_SUFFIXES = frozenset(
    {".py", ".sh", ".bash", ".zsh", ".fish", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php",
     ".lua", ".ps1", ".bat", ".cmd", ".go", ".rs"}
)
MAX_SCAN_BYTES = 1024 * 1024  # a bigger "script" is itself suspicious; reported, not read
MAX_FILES = 2000
EXFIL_WINDOW = 5  # lines between reading a secret and sending it somewhere

SEVERITIES = ("critical", "high", "medium", "low")


def finding(rule: str, severity: str, rel: str, line: int, message: str, excerpt: str) -> Problem:
    """A scan finding: a Problem graded critical | high | medium | low, at a path relative to the
    skill folder; `details` carry the rule id and the offending line."""
    return Problem(area="skills", severity=severity, path=rel, line=line, message=message,
                   details={"rule": rule, "excerpt": excerpt})


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    pattern: re.Pattern[str]
    message: str


def _r(pattern: str, flags: int = re.I) -> re.Pattern[str]:
    return re.compile(pattern, flags)


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
         _r(r"(?<![\w.])(eval|exec)\s*\(|\b__import__\s*\(|\bnew\s+Function\s*\(|^\s*eval\s+[\"'$]",
            re.M),
         "dynamic code execution"),
    Rule("obfuscated-blob", "high",
         _r(r"[A-Za-z0-9+/]{200,}={0,2}|(?:[0-9a-fA-F]{2}){120,}|(?:\\x[0-9a-fA-F]{2}){40,}", 0),
         "long encoded blob (possible obfuscated payload)"),
    Rule("shell-exec", "medium",
         _r(r"\bsubprocess\.(run|call|Popen|check_output|check_call)\b|\bos\.(system|popen|exec[lv]p?e?)\s*\("
            r"|\bchild_process\b|\bshell\s*=\s*True\b"),
         "runs shell commands"),
)

_SECRET_READ = _r(
    r"os\.environ|\bgetenv\s*\(|process\.env|\bprintenv\b|^\s*env\s*$|\$\{?[A-Z_]*(TOKEN|SECRET|KEY|PASSWORD)"
    r"|\.ssh/|id_rsa|id_ed25519|\.aws/credentials|\.netrc|\.git-credentials|/etc/shadow|\.kube/config"
    r"|keychain|\.gnupg", re.I | re.M,
)
_NETWORK_SEND = _r(
    r"\brequests\.(post|put|get)\b|\bhttpx\.(post|put|get)\b|urllib\.request|urlopen\s*\(|\bfetch\s*\("
    r"|\bcurl\b[^\n]*(-d\b|--data|-F\b|--form|-T\b|--upload-file|-X\s*POST)|\bwget\b[^\n]*--post"
    r"|\bsocket\.(socket|create_connection)|\bnc\s+-?\w*\s*\S+\s+\d+|axios\.(post|get)|XMLHttpRequest"
)


def code_files(skill_dir: Path) -> list[str]:
    """Code files of a skill (relative POSIX paths, sorted): everything under scripts/ plus code
    elsewhere (by suffix or shebang), never SKILL.md. Symlinks are skipped."""
    base = os.fspath(skill_dir)
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
        rel_dir = os.path.relpath(dirpath, base)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        in_scripts = rel_dir.startswith("scripts/")
        for name in filenames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            rel = rel_dir + name
            if rel == "SKILL.md":
                continue
            if in_scripts or os.path.splitext(name)[1].lower() in CODE_SUFFIXES:
                found.append(rel)
                continue
            try:
                with open(full, "rb") as handle:
                    head = handle.read(2)
            except OSError:
                continue
            if head.startswith(b"#!"):
                found.append(rel)
        if len(found) >= MAX_FILES:
            break
    return sorted(found)


def _excerpt(line: str) -> str:
    line = line.strip()
    return line if len(line) <= 160 else line[:157] + "..."


def scan_text(text: str, rel: str) -> list[Problem]:
    """Findings for one file's text (line numbers 1-based)."""
    findings: list[Problem] = []
    lines = text.splitlines()
    secret_lines: list[int] = []
    network_lines: list[int] = []
    for number, line in enumerate(lines, start=1):
        for rule in RULES:
            if rule.pattern.search(line):
                findings.append(finding(rule.id, rule.severity, rel, number, rule.message, _excerpt(line)))
        if _SECRET_READ.search(line):
            secret_lines.append(number)
        if _NETWORK_SEND.search(line):
            network_lines.append(number)
    for net in network_lines:
        near = [s for s in secret_lines if abs(s - net) <= EXFIL_WINDOW]
        if near:
            findings.append(
                finding(
                    "secret-exfiltration", "critical", rel, net,
                    f"reads secrets or the environment (line {near[0]}) and sends data over the network",
                    _excerpt(lines[net - 1]),
                )
            )
            break
    return findings


# --------------------------------------------------------------------------- the scan cache

SCANNER_VERSION = 1  # bump when the scan's logic changes; rule changes are caught by SCANNER_KEY anyway


def _scanner_key() -> str:
    """Names this scanner: its version and every rule (id, severity, pattern, message), so a cache
    written by another scanner (rules added or edited) is never trusted."""
    parts = [str(SCANNER_VERSION), str(EXFIL_WINDOW), _SECRET_READ.pattern, _NETWORK_SEND.pattern]
    parts += [f"{r.id}\0{r.severity}\0{r.pattern.pattern}\0{r.pattern.flags}\0{r.message}" for r in RULES]
    return sha256_hex("\n".join(parts))[:16]


SCANNER_KEY = _scanner_key()
CACHE_ENTRIES = 20_000  # a bound on the cache file; the oldest entries go first


class ScanCache:
    """Findings of code files by (path in the skill, sha256 of the bytes), kept in a JSON file so a
    new process never re-scans an unchanged skill: the bytes are still read and hashed (that is the
    key, and what `trust` pins), only the rules' pass is skipped. Workspace skills keep theirs in
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

    def save(self) -> None:
        """Write the file if anything new was scanned (atomically; a failure only costs speed)."""
        if not self.dirty or self.path is None:
            return
        with contextlib.suppress(OSError):
            atomic_write(self.path, json.dumps({"scanner": SCANNER_KEY, "entries": self._load()},
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


def scan_skill(skill_dir: Path, cache: ScanCache | None = None) -> ScanResult:
    """Scan a skill folder's code and hash it (the digest changes whenever any code changes)."""
    cache = cache if cache is not None else ScanCache()
    digest = hashlib.sha256()
    findings: list[Problem] = []
    scanned: list[str] = []
    for rel in code_files(skill_dir):
        path = os.path.join(skill_dir, rel)
        try:
            size = os.path.getsize(path)
            with open(path, "rb") as handle:
                raw = handle.read() if size <= MAX_SCAN_BYTES else b""
        except OSError:
            continue
        scanned.append(rel)
        digest.update(rel.encode() + b"\0" + str(size).encode() + b"\0" + raw + b"\0")
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
