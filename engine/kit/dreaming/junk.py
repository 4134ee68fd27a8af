"""The junk filter (§8): what must never be promoted, whatever its recall count.

`junk_rule(snippet)` returns the rule that matched (a `Junk` with its name and the reason shown by
`kit memory explain`, the reports and `--json`), or None for a snippet worth keeping. The rules,
in the order they are tried:

    too-short   under 12 characters                 one-word    a single word
    kit-text    Kit's own report or provenance text transcript  a speaker line (**User:** …)
    table       any Markdown table                  code        fenced or symbol-heavy code
    sql         an SQL statement                    data        inline JSON or YAML
    shell       a line that parses as a command     url         a bare URL
    question    a question, not a fact              greeting    greetings and pleasantries
    threat      whatever the memory threat scan rejects

"Parses as a command" is structural, not a list of program names: a lower-case program-like word
or a path, then at least one sign of a command line (a flag, a path, an operator, an assignment,
user@host, a version pin, a file name), in a line that does not read as prose.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from kit.lazyre import LazyPattern, fold_ascii
from kit.memory.questions import is_question, sentences
from kit.memory.threats import scan_text

MIN_CHARS = 12

SHELL = "looks like a shell command"
CODE = "looks like code"
TABLE = "looks like a table"
KIT_TEXT = "looks like Kit's own text"
SQL = "looks like SQL"
DATA = "looks like inline JSON or YAML"
TRANSCRIPT = "a transcript line (speaker prefix)"
URL = "a bare URL"
QUESTION = "a question, not a fact"
GREETING = "a greeting or pleasantry"
ONE_WORD = "a single word"
TOO_SHORT = f"too short (under {MIN_CHARS} chars)"


@dataclass(frozen=True)
class Junk:
    rule: str  # too-short | one-word | kit-text | transcript | table | code | sql | data | shell | url | question | greeting | threat
    reason: str


_KIT_TEXT = re.compile(
    r"<!--\s*kit:|\bkit:promoted\b|^#+\s*(?:Promoted memories|Light sleep|REM sleep|Deep sleep|Dream diary|To verify)\b"
    r"|\b(?:recall_count|unique_queries|recall_days|claim_hash|query_hash|blocked_by|phase boost)\b"
    r"|\bscore[=:]\s*\d|\brecalls[=:]\s*\d|\bconfidence[=:]\s*\d",
    re.I | re.M,
)
# what every match of _KIT_TEXT holds (lower case; a test reads them off its parse tree): text with
# none of them is not Kit's own, at a few substring tests instead of a search tried at every offset
_KIT_TEXT_WORDS = ("<!--", "kit:promoted", "promoted memories", "sleep", "dream diary", "to verify", "recall_",
                   "unique_queries", "_hash", "blocked_by", "phase boost", "score", "recalls", "confidence")
_FENCE = re.compile(r"^[^\S\n]*(?:[-*+]\s+|\d+[.)]\s+)?(?:```|~~~)", re.M)  # [^\S\n]: see claims._MARKER
# a table's delimiter row (|---|:--:|), also when a table was flattened onto one line
_TABLE_RULE = re.compile(r"\|\s*:?-{2,}:?\s*\|")
_CODE_CHARS = "{}[]();=<>$|&\\`"
_NO_CODE_CHARS = str.maketrans("", "", _CODE_CHARS)  # counting them: the length they take away
# a line of code opens like one, or holds an arrow or a console.log( call anywhere: the opening is
# matched at the start only, and the rest found by substring first (a search of the whole pattern
# was tried at every offset of every line)
_CODE_OPENING = re.compile(
    r"(?:def|class|function|const|let|var|import|return|public|private|fn|func)\s+[\w$]"
    r"|from\s+[\w.]+\s+import\b|#include\b|\w+(?:\.\w+)*\([^)]*\)\s*;?$"
)
_CONSOLE_LOG = re.compile(r"\bconsole\.log\(")


def _opens_like_code(line: str) -> bool:
    return (_CODE_OPENING.match(line) is not None or "=>" in line
            or ("console.log(" in line and _CONSOLE_LOG.search(line) is not None))


# Speaker prefixes: session archives (**User:** …), chat exports (User: …, [09:14] sam: …).
_TRANSCRIPT = re.compile(
    r"^(?:\*\*|__)?\s*(?:user|assistant|system|human|ai|bot|agent|kit|model|tool)\s*(?:\*\*|__)?\s*:"
    r"|^\*\*[^*\n]{1,40}?:\*\*\s|^\*\*[^*\n]{1,40}?\*\*\s*:\s|^\[\d{1,2}:\d{2}(?::\d{2})?\]\s*[\w .-]{1,30}:\s",
    re.I,
)

_SQL_UPPER = re.compile(
    r"\b(?:SELECT\b[^\n]*\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(?:TABLE|INDEX|VIEW)"
    r"|ALTER\s+TABLE|DROP\s+(?:TABLE|INDEX)|WITH\s+\w+\s+AS\s*\()\b"
)
_SQL_ANY = re.compile(_SQL_UPPER.pattern, re.I)
_SQL_SIGNS = re.compile(r"\*|\w\(|=|;\s*$|\b(?:where|group\s+by|order\s+by|join|limit)\b", re.I)

_YAML_KEY = re.compile(r"^[a-z_][a-z0-9_.\-/]*\s*:\s+(?P<value>.*)$")
_YAML_SCALAR = re.compile(r"^(?:-?\d+(?:\.\d+)?|true|false|null|yes|no|~|\"[^\"]*\"|'[^']*')$", re.I)

_CJK = LazyPattern(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")  # compiled at its first non-ASCII text
_URL = re.compile(r"<?(?:https?://|www\.)\S+>?|\[[^\]]*\]\((?:https?://|www\.)[^)]*\)", re.I)

_PLEASANTRY = re.compile(
    r"^(?:hi|hello|hey|hiya|yo|morning|evening|good\s+(?:morning|afternoon|evening|night|day)|thanks?|thank\s+you|ta"
    r"|cheers|bye|goodbye|see\s+you|take\s+care|welcome|you'?re\s+welcome|no\s+(?:worries|problem)|sounds\s+good"
    r"|ok(?:ay)?|sure|great|cool|nice|awesome|brilliant|perfect|lol|haha|congrats|congratulations|well\s+done"
    r"|good\s+to\s+(?:hear|see)|nice\s+to\s+(?:meet|see|hear)|how\s+are\s+you|how'?s\s+it\s+going"
    r"|ol[áa]|obrigad[ao]|bom\s+dia|boa\s+(?:tarde|noite)|merci|danke|gracias|hola)\b",
    re.I,
)
_WISH = re.compile(r"^(?:i\s+)?(?:hope|have\s+a|enjoy|sleep\s+well|get\s+well|happy\s+\w+)\b", re.I)

# Words of ordinary prose: a "command" mostly made of these is a sentence ("make sure the tests pass").
_PROSE = frozenset(
    """a an the and or but if then to of in on at for with from by about into over after before is are was were be
    been it its this that these those i you we he she they my your our his her their me us him them not no so as
    do does did have has had will would can could should must may might sure when where what who how why which
    all some any every each other more most very just also only still even again see use""".split()
)
_SHELL_PROMPT = re.compile(r"^(?:\$|>>>|#\s*\w+@[\w.-]+)\s")
_PROGRAM = re.compile(r"^(?:[a-z][a-z0-9_+\-]*(?:\.[a-z0-9]+)?|\.{1,2}/\S+|~/\S+|/[\w.\-/]+)$")
_ASSIGN = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")
_FLAG = re.compile(r"^--?[A-Za-z][\w\-]*(?:=\S*)?$")
_OPERATORS = frozenset({"|", "||", "&&", ";", ">", ">>", "<", "2>", "2>&1", "&", "$(", "`"})
_FILEISH = re.compile(r"^[\w.\-]+\.[a-z0-9]{1,5}$|^[\w.\-]*/[\w.\-/~]*$|^~|^\.{1,2}/|==\d|^\w+@[\w.\-]+$"
                      r"|^\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?$|^https?://")


_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")


def _strip_marker(line: str) -> str:
    return _MARKER.sub("", line)


def _lines(text: str) -> list[str]:
    return [_strip_marker(line).strip() for line in text.splitlines() if line.strip()]


def is_shell_line(line: str) -> bool:
    """A line that parses as a command line (see the module docstring)."""
    line = line.strip().strip("`").strip()
    if _SHELL_PROMPT.match(line):
        return True
    first = line.split(maxsplit=1)[0] if line else ""
    if first.lower() in _PROSE or not (_PROGRAM.match(first) or _ASSIGN.match(first) or first in ("export", "sudo", "env")):
        return False  # a sentence ("Lunch at …") never starts like a command: skip the lexer
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:  # an unbalanced quote: prose with apostrophes ("Ben's cake"), not a command
        return False
    while tokens and _ASSIGN.match(tokens[0]):  # FOO=bar cmd …
        tokens = tokens[1:]
    if tokens and tokens[0] in ("export", "sudo", "env") and len(tokens) > 1:
        tokens = tokens[1:]
        if _ASSIGN.match(tokens[0]):
            return True
    if len(tokens) < 2 or not _PROGRAM.match(tokens[0]):
        return False
    rest = tokens[1:]
    signs = sum(1 for t in rest if _FLAG.match(t) or t in _OPERATORS or _ASSIGN.match(t) or _FILEISH.search(t))
    if not signs:
        return False
    words = [t.lower().strip(",.;:!?") for t in tokens]
    prose = sum(1 for w in words if w in _PROSE)
    return prose * 3 < len(words)


def _is_kit_text(text: str, folded: str) -> bool:
    return any(word in folded for word in _KIT_TEXT_WORDS) and _KIT_TEXT.search(text) is not None


def _is_table(text: str, lines: list[str]) -> bool:
    """Any Markdown table (a row of cells means nothing out of its table), flattened or not."""
    if _TABLE_RULE.search(text):
        return True
    rows = [line for line in lines if line.startswith("|") and line.count("|") >= 2]
    return len(rows) >= 2 or any(row.count("|") >= 3 for row in rows)


def _is_code(text: str, lines: list[str]) -> bool:
    if (("```" in text or "~~~" in text) and _FENCE.search(text)) or text.lstrip("\n").startswith("    "):
        return True
    code = [line.strip("`") for line in lines]
    if sum(1 for line in code if _opens_like_code(line)) * 2 >= len(code):
        return True
    body = "".join(code)
    symbols = len(body) - len(body.translate(_NO_CODE_CHARS))
    if symbols < 4:
        return False  # too few for code, whatever the letters (counted only when it takes them)
    letters = sum(map(str.isalpha, body))
    # prose has few brackets and operators; code and shell have many
    return symbols > 0.12 * max(1, letters)


# what every SQL statement above holds (lower case; a test reads them off the pattern's parse tree:
# a DROP is found by the TABLE or INDEX it drops)
_SQL_WORDS = ("select", "insert", "update", "delete", "create", "alter", "table", "index", "with")


def _is_sql(text: str, folded: str) -> bool:
    """`folded`: the folded text `text` was flattened from — every word of `text` is one of it."""
    if not any(word in folded for word in _SQL_WORDS):
        return False
    if _SQL_UPPER.search(text):
        return True
    m = _SQL_ANY.search(text)
    return m is not None and _SQL_SIGNS.search(text[m.start():]) is not None


def _json_value(text: str) -> bool:
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = text.find(opener), text.rfind(closer)
        if start < 0 or end <= start or end - start < 8:
            continue
        try:
            value = json.loads(text[start : end + 1])
        except ValueError:
            continue
        if (isinstance(value, dict) and value) or (isinstance(value, list) and len(value) >= 2):
            return True
    return False


def _is_yaml_line(line: str) -> bool:
    m = _YAML_KEY.match(line.strip("`"))
    if not m:
        return False
    value = m.group("value").strip()
    key = line.split(":", 1)[0]
    return (value.startswith(("{", "[")) or _YAML_SCALAR.match(value) is not None
            or any(ch in key for ch in "_./") and " " not in value)


def _is_data(text: str, lines: list[str]) -> bool:
    if _json_value(text):
        return True
    yaml = sum(1 for line in lines if _is_yaml_line(line))
    return yaml * 2 > len(lines)


# what every match of _URL holds (lower case: a test reads them off its parse tree)
_URL_WORDS = ("http", "www.")


def _is_url(text: str, folded: str) -> bool:
    """`folded`: as in `_is_sql`."""
    if not any(word in folded for word in _URL_WORDS) or not _URL.search(text):
        return False
    return len(re.findall(r"[^\W\d_]{2,}", _URL.sub(" ", text))) < 3


def _is_pleasantry(sentence: str) -> bool:
    # the words are counted only after a match (most sentences are no pleasantry)
    if _PLEASANTRY.match(sentence) and len(sentence.split()) <= 6:
        return True
    return _WISH.match(sentence) is not None and len(sentence.split()) <= 12


def _is_greeting(parts: list[str]) -> bool:
    """`parts`: the text's `sentences`."""
    return bool(parts) and all(_is_pleasantry(s.rstrip(".!?, ")) for s in parts)


def junk_rule(snippet: str) -> Junk | None:
    text = snippet.strip()
    return _junk_but_threat(text) or _threat(text)


def junk_rules(snippets: Iterable[str]) -> list[Junk | None]:
    """`junk_rule` of each snippet, the threat scan last for all of them at once: apart, the scan
    and the other rules each keep their patterns and tables in the CPU's caches (a dream judges
    hundreds of snippets; taking turns made it a sixth slower)."""
    texts = [s.strip() for s in snippets]
    found = [_junk_but_threat(text) for text in texts]
    return [junk if junk is not None else _threat(text) for junk, text in zip(found, texts, strict=True)]


def _junk_but_threat(text: str) -> Junk | None:
    """The rules before the threat scan, in order, on the stripped snippet."""
    lines = _lines(text)
    flat = " ".join(lines)
    if len(flat) < MIN_CHARS:
        return Junk("too-short", TOO_SHORT)
    folded = fold_ascii(text)  # for the rules' word tests (each rule's words are checked against it)
    if _is_kit_text(text, folded):
        return Junk("kit-text", KIT_TEXT)
    if any(_TRANSCRIPT.match(line) for line in lines):
        return Junk("transcript", TRANSCRIPT)
    if _is_table(text, lines):
        return Junk("table", TABLE)
    if _is_url(flat, folded):
        return Junk("url", URL)
    if len(flat.split()) == 1 and (flat.isascii() or not _CJK.search(flat)):
        return Junk("one-word", ONE_WORD)
    if _is_sql(flat, folded):
        return Junk("sql", SQL)
    if _is_data(flat, lines):
        return Junk("data", DATA)
    if _is_code(text, lines):
        return Junk("code", CODE)
    if sum(1 for line in lines if is_shell_line(line)) * 2 >= len(lines):
        return Junk("shell", SHELL)
    parts = sentences(flat.strip())  # read by both rules below
    if is_question(flat, parts):  # the archive's definition: also without "?"
        return Junk("question", QUESTION)
    if _is_greeting(parts):
        return Junk("greeting", GREETING)
    return None


def _threat(text: str) -> Junk | None:
    threat = scan_text(text)
    return Junk("threat", f"failed the threat scan: {threat}") if threat else None


def junk_reason(snippet: str) -> str | None:
    """The reason `snippet` is junk (names the rule that matched), or None."""
    found = junk_rule(snippet)
    return found.reason if found else None
