"""Static security scan of a skill's code (§5): scripts/ and any other code file in the folder.

Rules are plain regular expressions over lines (plus one two-signal rule: reading secrets and
sending over the network within a few lines). A `critical` finding keeps the skill out of the
prompt until the user trusts that exact code (`kit skills trust NAME`, by content hash).
Markdown is not scanned: instructions that *mention* `curl … | sh` are documentation, not code.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from kit.fsutil import looks_binary, sha256_hex
from kit.problems import Problem

CODE_SUFFIXES = frozenset(
    {".py", ".sh", ".bash", ".zsh", ".fish", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php",
     ".lua", ".ps1", ".bat", ".cmd", ".go", ".rs"}
)
SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv"})
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
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
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


_SCAN_CACHE: dict[tuple[str, str], tuple[Problem, ...]] = {}


def _scan_cached(raw: bytes, rel: str) -> tuple[Problem, ...]:
    """scan_text memoised by (path, content hash): the content is always re-read and re-hashed,
    only the regex pass is skipped for bytes already scanned (rebuilds with 200 skills stay cheap)."""
    key = (rel, sha256_hex(raw))
    hit = _SCAN_CACHE.get(key)
    if hit is None:
        if len(_SCAN_CACHE) > 20_000:
            _SCAN_CACHE.clear()
        hit = _SCAN_CACHE[key] = tuple(scan_text(raw.decode("utf-8", errors="replace"), rel))
    return hit


@dataclass(frozen=True)
class ScanResult:
    findings: tuple[Problem, ...]
    digest: str  # sha256 over the code files' paths and bytes: what `trust` pins
    files: tuple[str, ...]  # the code files scanned, relative

    @property
    def critical(self) -> tuple[Problem, ...]:
        return tuple(f for f in self.findings if f.severity == "critical")


def scan_skill(skill_dir: Path) -> ScanResult:
    """Scan a skill folder's code and hash it (the digest changes whenever any code changes)."""
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
        findings.extend(_scan_cached(raw, rel))
    order = {s: i for i, s in enumerate(SEVERITIES)}
    findings.sort(key=lambda f: (order.get(f.severity, 9), f.path, f.line, f.details["rule"]))
    return ScanResult(tuple(findings), digest.hexdigest(), tuple(scanned))
