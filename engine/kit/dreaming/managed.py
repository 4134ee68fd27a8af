"""MEMORY.md's managed section (§8): parse, merge and render, never touching the user's text.

    ## Promoted memories

    <!-- kit:promoted key=memory/2026-05-07.md:12:14 claim=3f2a9c1b0d4e score=0.812 recalls=4 queries=3 date=2026-05-09 -->
    - <snippet, one line>

The section runs from its heading to the next level-2 heading (or the end of the file). Entries
keep the order they were written in; new ones are appended. An entry's body is whatever the file
holds under its comment, so a user's edit to it is kept as is. Lines in the section that are not
entries are kept where they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kit.provenance import HTML_COMMENT

HEADING = "## Promoted memories"
MAX_SNIPPET_CHARS = 640  # ~160 tokens at 4 chars a token
_COMMENT = re.compile(r"^<!--\s*kit:promoted\s+(?P<attrs>.*?)\s*-->\s*$")
_ATTR = re.compile(r"(\w+)=(\S+)")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")


@dataclass(frozen=True)
class Entry:
    attrs: tuple[tuple[str, str], ...]  # in written order
    body: tuple[str, ...]  # the lines under the comment, as in the file

    @property
    def key(self) -> str:
        return self.attr("key")

    @property
    def claim(self) -> str:
        return self.attr("claim")

    def attr(self, name: str, default: str = "") -> str:
        return dict(self.attrs).get(name, default)

    @property
    def text(self) -> str:
        return " ".join(_LIST_MARKER.sub("", line).strip() for line in self.body).strip()

    def render(self) -> list[str]:
        attrs = " ".join(f"{k}={v}" for k, v in self.attrs)
        return [f"<!-- kit:promoted {attrs} -->", *self.body]


def markers(text: str) -> list[dict[str, str]]:
    """The attributes of every kit:promoted marker in `text`, in file order: the archive's entries
    (it has no promoted section for `parse`)."""
    return [dict(_ATTR.findall(m.group("attrs"))) for line in text.split("\n")
            if (m := _COMMENT.match(line.strip()))]


@dataclass(frozen=True)
class Loose:
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Parsed:
    before: str  # the user's text above the section (or the whole file when there is none)
    blocks: tuple[Entry | Loose, ...]
    after: str  # anything after the section's end (a later level-2 heading onwards)
    has_section: bool

    @property
    def entries(self) -> list[Entry]:
        return [b for b in self.blocks if isinstance(b, Entry)]

    def section_text(self) -> str:
        return render_section(self.blocks) if self.has_section or self.entries else ""


_URL_PART = 8  # a cut inside a word goes back to a separator of a URL at most this far


def one_line(snippet: str, limit: int = MAX_SNIPPET_CHARS) -> str:
    """A snippet as one list-item line: markers stripped, whitespace collapsed, cut at a word.

    Sub-items of a list item are joined with "; " ("Deploys: api on Tuesday; web on Thursday"), so a
    nested list reads as one sentence; wrapped continuation lines are joined with a space.
    """
    # comments first (a kit:promoted one alone atop a note's line, or one spanning lines): a comment
    # line read as the first line made the item below it a sub-item ("- ; Frank takes the train")
    snippet = HTML_COMMENT.sub(" ", snippet)
    text = ""
    for index, line in enumerate(snippet.splitlines()):
        part = _LIST_MARKER.sub("", line).strip()
        if not part:
            continue
        if not text:
            text = part
        elif index and _LIST_MARKER.match(line) and not text.rstrip().endswith((":", ";", "—", "-")):
            text = text.rstrip().rstrip(",.") + "; " + part
        else:
            text += " " + part
    text = " ".join(text.split())
    if len(text) > limit:
        cut = text[: limit - 1]
        # at a word, unless that drops a third of the room: a long URL or path is cut inside, not
        # dropped ("Grafana dashboard…" said nothing of where it is)
        at_word = cut if text[limit - 1] == " " else cut.rsplit(" ", 1)[0]
        if len(at_word) >= (limit - 1) * 2 // 3:
            cut = at_word
        else:  # inside the word: after a URL's separator close by ("?version=…", not "?version=1…")
            sep = max(cut.rfind(c, max(0, len(cut) - _URL_PART)) for c in "/?&=#")
            if sep > len(at_word):
                cut = cut[: sep + 1]
        text = cut.rstrip(",.;:") + "…"
    return text


def make_entry(*, key: str, claim: str, score: float, recalls: int, queries: int, day: str, text: str,
               extra: Iterable[tuple[str, str]] = ()) -> Entry:
    attrs = (("key", key), ("claim", claim), ("score", f"{score:.3f}"), ("recalls", str(recalls)),
             ("queries", str(queries)), ("date", day), *extra)
    return Entry(attrs, (f"- {one_line(text)}",))


def parse(text: str) -> Parsed:
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.rstrip() == HEADING), None)
    if start is None:
        return Parsed(text, (), "", False)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    before = "\n".join(lines[:start])
    after = "\n".join(lines[end:])
    blocks: list[Entry | Loose] = []
    i = start + 1
    body = lines[start + 1 : end]
    i = 0
    loose: list[str] = []
    while i < len(body):
        m = _COMMENT.match(body[i].strip())
        if not m:
            loose.append(body[i])
            i += 1
            continue
        if any(line.strip() for line in loose):
            blocks.append(Loose(tuple(_trim(loose))))
        loose = []
        attrs = tuple(_ATTR.findall(m.group("attrs")))
        i += 1
        entry_body: list[str] = []
        while i < len(body) and body[i].strip() and not _COMMENT.match(body[i].strip()):
            entry_body.append(body[i])
            i += 1
        blocks.append(Entry(attrs, tuple(entry_body)))
    if any(line.strip() for line in loose):
        blocks.append(Loose(tuple(_trim(loose))))
    return Parsed(before, tuple(blocks), after, True)


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def render_section(blocks: Iterable[Entry | Loose]) -> str:
    out = [HEADING, ""]
    for block in blocks:
        if isinstance(block, Loose):
            out.extend([*block.lines, ""])
        elif block.body:  # an entry whose text the user deleted is gone
            out.extend(block.render())
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def render(p: Parsed) -> str:
    if not p.has_section and not p.entries:
        return p.before
    before = p.before.rstrip("\n")
    head = (before + "\n\n") if before.strip() else ""
    text = head + render_section(p.blocks)
    if p.after.strip():
        text += "\n" + p.after.lstrip("\n")
        if not text.endswith("\n"):
            text += "\n"
    return text


def merge(text: str, *, add: Iterable[Entry] = (), remove: Iterable[tuple[str, str]] = ()) -> str:
    """Apply Deep's changes to the current MEMORY.md text; everything else stays as it is."""
    p = parse(text)
    gone = set(remove)
    add = list(add)
    if not add and not any((b.key, b.claim) in gone for b in p.entries):
        return text
    present = {(b.key, b.claim) for b in p.entries}
    blocks = [b for b in p.blocks if not (isinstance(b, Entry) and (b.key, b.claim) in gone)]
    blocks.extend(e for e in add if (e.key, e.claim) not in present)
    return render(Parsed(p.before, tuple(blocks), p.after, True))


def section_chars(text: str) -> int:
    return len(parse(text).section_text())


def drop_user_line(text: str, line: str) -> str:
    """`text` without the user's own line `line` (as `user_lines` gives it); unchanged when absent."""
    p = parse(text)
    if not p.has_section and not p.entries:
        parts = [p.before]
    else:
        parts = [p.before, p.after]
    for i, part in enumerate(parts):
        rows = part.split("\n")
        for j, raw in enumerate(rows):
            s = raw.strip()
            if s and not s.startswith(("#", "<!--")) and _LIST_MARKER.sub("", s) == line:
                parts[i] = "\n".join(rows[:j] + rows[j + 1 :])
                if len(parts) == 1:
                    return parts[0]
                return render(Parsed(parts[0], p.blocks, parts[1], p.has_section))
    return text


def user_lines(text: str) -> list[str]:
    """The user's own facts above the section (list items and paragraph lines), for dedupe."""
    p = parse(text)
    out = []
    for line in p.before.split("\n") + p.after.split("\n"):
        s = line.strip()
        if not s or s.startswith(("#", "<!--")):
            continue
        out.append(_LIST_MARKER.sub("", s))
    return out
