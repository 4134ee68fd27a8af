"""Markdown-aware chunking (markdown-it-py).

Files are cut at headings and block boundaries into chunks of about `tokens`, and consecutive chunks
of one section share `overlap` tokens' worth of whole lines. A fenced code block, table or HTML block
is never cut unless it alone is larger than a chunk; then it is cut at line boundaries, and a single
line larger than a chunk is cut (at whitespace when it can) into pieces that all point at that line.

Daily notes (`memory/YYYY-MM-DD*.md`), MEMORY.md and the archive of retired entries are chunked by
claim: every top-level list item or paragraph is its own chunk, so a recall points at one fact and
dreaming promotes that fact, and a search of MEMORY.md finds the entry, not the whole file.

Facts, not boilerplate: text that `kit init` wrote and the user never changed (the MEMORY.md
template's paragraph), a chunk of nothing but headings and one of nothing but HTML comments are not
chunks. Every chunk knows the day it is about (`chunk_day`).

Line numbers are 1-based and inclusive. Token counts are estimates: CJK characters count one token
each, anything else four characters per token (the same rule the prompt budget uses).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from kit.fsutil import sha1_hex
from kit.lazyre import LazyPattern
from kit.memory.notes import note_date, one_fact_per_item
from kit.paths import bundled
from kit.provenance import HTML_COMMENT, strip_kit_comments

# 5: untouched template text, heading-only and comment-only chunks dropped; chunks carry their day.
# 6: MEMORY.md and the archive chunked by claim. Bump when chunk boundaries change, so indexes re-chunk.
# 8: MEMORY.md's title and Kit's "Promoted memories" heading are no context for the model.
CHUNKER_VERSION = 8

# compiled at its first non-ASCII text (a class of 50,000 characters costs milliseconds to compile)
_CJK = LazyPattern(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f]"
)
_ATOMIC = {"fence", "code_block", "table", "html_block"}


def estimate_tokens(text: str) -> float:
    cjk = 0 if text.isascii() else len(_CJK.findall(text))
    return cjk + (len(text) - cjk) / 4


def has_cjk(text: str) -> bool:
    return not text.isascii() and _CJK.search(text) is not None


@dataclass(frozen=True)
class Chunk:
    path: str
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    heading_path: tuple[str, ...]
    text: str
    hash: str  # sha1 of embed_text: the embedding-cache key together with the model
    day: str | None = None  # ISO date the chunk is about (chunk_day); None for undated text

    @property
    def heading(self) -> str:
        return " > ".join(self.heading_path)

    @property
    def embed_text(self) -> str:
        return embed_text(self.heading_path, self.text)


_DATE_HEADING = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# headings that say only where a line sits, not what it is about: MEMORY.md's title and the section
# Kit's dreaming writes ("Memory > Promoted memories" took a promoted fact's cosine to "billing
# database port" from 0.553 to 0.469, and ranked it under the stale value it had replaced)
_PLACE_HEADINGS = frozenset({"memory", "promoted memories"})


def embed_text(heading_path: Sequence[str], text: str) -> str:
    """What the model sees: the heading path as context, then the chunk.

    A heading that is only a date (`# 2026-05-07` atop a daily note) is left out: it means nothing
    to the model, the date is in the path already, and without it the same claim written on two
    days shares one cached vector. So are "Memory" and "Promoted memories" (`_PLACE_HEADINGS`): a
    fact promoted from a note embeds as the note's line does, and shares its cached vector.
    """
    context = [h for h in heading_path
               if not _DATE_HEADING.match(h.strip()) and h.strip().lower() not in _PLACE_HEADINGS]
    text = strip_kit_comments(text)
    if context:
        return " > ".join(context) + "\n" + text
    return text


_LEADING_DATE = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])?\s*(?:\[[ xX]\]\s+)?(?:\*\*|__|\*|_)?(\d{4}-\d{2}-\d{2})(?!\d)")
_PROMOTED_FROM = re.compile(r"<!--\s*kit:promoted\b[^>]*?\bkey=memory/(\d{4}-\d{2}-\d{2})")


def _valid_day(text: str) -> str | None:
    from datetime import date

    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        return None


def chunk_day(path: str, heading_path: Sequence[str], text: str) -> str | None:
    """The day a chunk is about: a date opening its first line (`- 2026-03-14: …`), the note a
    promoted MEMORY.md entry came from (its comment alone on a line atop the entry: one inside a
    line says nothing of the day, nor one in a daily note, whose day is its own), the nearest
    heading that is a date, else the note's name."""
    named = note_date(path)
    atop: list[str] = []  # the comment lines above the first line of text
    for line in text.split("\n"):
        if not line.strip():
            continue
        if not HTML_COMMENT.sub("", line).strip():
            atop.append(line)
            continue
        m = _LEADING_DATE.match(HTML_COMMENT.sub("", line))
        if m and (day := _valid_day(m.group(1))):
            return day
        break
    m = _PROMOTED_FROM.search("\n".join(atop)) if named is None else None  # a daily note's day is its own
    if m and (day := _valid_day(m.group(1))):
        return day
    for heading in reversed(heading_path):
        m = _LEADING_DATE.match(heading)
        if m and (day := _valid_day(m.group(1))):
            return day
    return named.isoformat() if named else None


def make_chunk(path: str, start: int, end: int, headings: Sequence[str], text: str) -> Chunk:
    heads = tuple(headings)
    return Chunk(path, start, end, heads, text, sha1_hex(embed_text(heads, text)), chunk_day(path, heads, text))


_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")


def says_something(text: str) -> bool:
    """False for text that is only headings, HTML comments (Kit's provenance ones included) and
    blank lines: such a chunk answers no question."""
    body = HTML_COMMENT.sub("", text)
    return any(line.strip() and not _HEADING_LINE.match(line) for line in body.split("\n"))


def _normalised(text: str) -> str:
    return " ".join(text.split())


@lru_cache(maxsize=16)
def boilerplate(path: str) -> frozenset[str]:
    """The blocks `kit init` writes into `path` (normalised whitespace): text the user never changed
    is the template's, not a fact. Read from the bundled workspace template; empty for other files."""
    template = bundled("workspace") / path
    if not template.is_file():
        return frozenset()
    lines = template.read_text(encoding="utf-8").split("\n")
    return frozenset(_normalised("\n".join(lines[b.start : b.end])) for b in _blocks(lines) if b.kind != "heading")


def _blank_boilerplate(path: str, lines: list[str], blocks: list[_Block]) -> list[str]:
    """`lines` with the template's untouched blocks blanked (line numbers stay)."""
    template = boilerplate(path)
    if not template:
        return lines
    out = list(lines)
    for b in blocks:
        if b.kind != "heading" and _normalised("\n".join(lines[b.start : b.end])) in template:
            out[b.start : b.end] = [""] * (b.end - b.start)
    return out


@dataclass(frozen=True)
class _Block:
    start: int  # 0-based, inclusive
    end: int  # 0-based, exclusive
    kind: str  # heading | paragraph | item | fence | code_block | table | html_block | blockquote | hr
    level: int = 0  # heading level
    title: str = ""


@dataclass(frozen=True)
class _Unit:
    """A piece to pack: whole lines [start, end], or `piece` of one over-long line."""

    start: int
    end: int  # inclusive
    tokens: float
    atomic: tuple[int, int] | None = None  # the unsplit fence/table this unit is (no overlap inside)
    piece: str | None = None


@lru_cache(maxsize=1)
def _parser():
    from markdown_it import MarkdownIt

    # block structure only (heading titles are the inline tokens' .content, set by the block pass):
    # the inline pass is most of the time, and scanning brackets, 200 KB of '[' took minutes
    return MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])


def frontmatter_end(lines: Sequence[str]) -> int:
    """Number of leading lines that are YAML frontmatter (0 if none or never closed)."""
    if not lines or lines[0].strip() != "---":
        return 0
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            return index + 1
    return 0


def _blocks(lines: list[str]) -> list[_Block]:
    tokens = _parser().parse("\n".join(lines))
    blocks: list[_Block] = []
    for index, tok in enumerate(tokens):
        if tok.map is None:
            continue
        start, end = tok.map
        if tok.level == 0 and tok.type == "heading_open":
            title = tokens[index + 1].content.strip() if index + 1 < len(tokens) else ""
            blocks.append(_Block(start, end, "heading", int(tok.tag[1:]), title))
        elif tok.level == 1 and tok.type == "list_item_open":
            blocks.append(_Block(start, end, "item"))
        elif tok.level == 0 and tok.nesting >= 0 and tok.type not in ("bullet_list_open", "ordered_list_open"):
            kind = tok.type.removesuffix("_open")
            blocks.append(_Block(start, end, kind))
    out = []
    for b in blocks:  # trailing blank lines belong to no block
        end = b.end
        while end > b.start + 1 and not lines[end - 1].strip():
            end -= 1
        out.append(_Block(b.start, end, b.kind, b.level, b.title))
    return out


def _split_line(line_no: int, text: str, max_tokens: float) -> list[_Unit]:
    """Pieces of one over-long line, cut after the last whitespace that leaves the piece at least
    half full (mid-word only when there is none); the pieces concatenate back to the line."""
    cjk = (lambda c: None) if text.isascii() else _CJK.compiled.match

    def weight_of(chars: list[str]) -> float:
        return sum(1.0 if cjk(c) else 0.25 for c in chars)

    units, piece, weight = [], [], 0.0
    for char in text:
        w = 1.0 if cjk(char) else 0.25
        if piece and weight + w > max_tokens:
            cut = next((k for k in range(len(piece) - 1, len(piece) // 2 - 1, -1) if piece[k].isspace()), None)
            rest = piece[cut + 1 :] if cut is not None else []
            head = piece[: cut + 1] if cut is not None else piece
            units.append(_Unit(line_no, line_no, weight_of(head), piece="".join(head)))
            piece, weight = rest, weight_of(rest)
        piece.append(char)
        weight += w
    if piece:
        units.append(_Unit(line_no, line_no, weight, piece="".join(piece)))
    return units


def _units(block: _Block, lines: list[str], max_tokens: float) -> list[_Unit]:
    tokens = sum(estimate_tokens(lines[i]) + 0.25 for i in range(block.start, block.end))
    if tokens <= max_tokens:
        atomic = (block.start, block.end - 1) if block.kind in _ATOMIC else None
        return [_Unit(block.start, block.end - 1, tokens, atomic)]
    out: list[_Unit] = []
    for i in range(block.start, block.end):
        cost = estimate_tokens(lines[i]) + 0.25
        if cost > max_tokens:
            out.extend(_split_line(i, lines[i], max_tokens))
        else:
            out.append(_Unit(i, i, cost))
    return out


class _Packer:
    """Greedy packing of units into chunks of at most `max_tokens`, with whole-line overlap."""

    def __init__(self, path: str, lines: list[str], max_tokens: float, overlap: float):
        self.path, self.lines = path, lines
        self.max_tokens, self.overlap = max_tokens, overlap
        self.chunks: list[Chunk] = []
        self.units: list[_Unit] = []
        self.carry: int | None = None  # first line carried over from the previous chunk
        self.atomics: list[tuple[int, int]] = []

    def _tokens(self) -> float:
        carried = 0.0
        if self.carry is not None and self.units:
            carried = sum(estimate_tokens(self.lines[i]) + 0.25 for i in range(self.carry, self.units[0].start))
        return carried + sum(u.tokens for u in self.units)

    def add(self, unit: _Unit, headings: Sequence[str]) -> None:
        if unit.atomic:
            self.atomics.append(unit.atomic)
        if unit.piece is not None:
            self.flush(headings, overlap=False)
            self.units = [unit]
            self.flush(headings, overlap=False)
            return
        if self.units and self._tokens() + unit.tokens > self.max_tokens:
            self.flush(headings, overlap=True)
        self.units.append(unit)

    def flush(self, headings: Sequence[str], *, overlap: bool) -> None:
        if not self.units:
            self.carry = None
            return
        first = self.units[0]
        if first.piece is not None:
            self.chunks.append(make_chunk(self.path, first.start + 1, first.end + 1, headings, first.piece))
            self.units, self.carry = [], None
            return
        start = self.carry if self.carry is not None else first.start
        end = self.units[-1].end
        text = "\n".join(self.lines[start : end + 1])
        if text.strip():
            self.chunks.append(make_chunk(self.path, start + 1, end + 1, headings, text))
        self.units = []
        self.carry = self._overlap_start(start, end) if overlap and self.overlap > 0 else None

    def _overlap_start(self, start: int, end: int) -> int | None:
        """The first of the trailing whole lines (≤ overlap tokens) to repeat in the next chunk."""
        carried, first = 0.0, None
        for i in range(end, start, -1):
            carried += estimate_tokens(self.lines[i]) + 0.25
            if carried > self.overlap:
                break
            first = i
        if first is None:
            return None
        for a, b in self.atomics:  # never start the next chunk inside an intact code block or table
            if a < first <= b:
                first = b + 1
        while first <= end and not self.lines[first].strip():
            first += 1
        return first if first <= end else None


def chunk_markdown(path: str, text: str, *, tokens: int = 400, overlap: int = 80) -> list[Chunk]:
    """Chunks of a Markdown file; daily notes, MEMORY.md and the archive are chunked by claim."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    skip = frontmatter_end(lines)
    body = [""] * skip + lines[skip:]  # blank the frontmatter, keep the line numbers
    if not any(line.strip() for line in body):
        return []
    blocks = _blocks(body)
    cleaned = _blank_boilerplate(path, body, blocks)
    if cleaned != body:
        body, blocks = cleaned, _blocks(cleaned)
    max_tokens = max(float(tokens), 8.0)
    overlap_tokens = max(0.0, min(float(overlap), max_tokens / 2))
    if one_fact_per_item(path):
        chunks = _chunk_claims(path, body, blocks, max_tokens, overlap_tokens)
    else:
        chunks = _chunk_sections(path, body, blocks, max_tokens, overlap_tokens)
    return [c for c in chunks if says_something(c.text)]


def _chunk_sections(path: str, lines: list[str], blocks: list[_Block], max_tokens: float, overlap: float) -> list[Chunk]:
    packer = _Packer(path, lines, max_tokens, overlap)
    stack: list[tuple[int, str]] = []
    only_headings = False  # the current chunk holds nothing but headings so far
    for block in blocks:
        if block.kind == "heading":
            if not only_headings:
                packer.flush([t for _, t in stack], overlap=False)
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
            only_headings = True
            packer.add(_Unit(block.start, block.end - 1, estimate_tokens(block.title) + 1), [t for _, t in stack])
            continue
        only_headings = False
        for unit in _units(block, lines, max_tokens):
            packer.add(unit, [t for _, t in stack])
    packer.flush([t for _, t in stack], overlap=False)
    return packer.chunks


def _chunk_claims(path: str, lines: list[str], blocks: list[_Block], max_tokens: float, overlap: float) -> list[Chunk]:
    chunks: list[Chunk] = []
    stack: list[tuple[int, str]] = []
    provenance: _Block | None = None  # Kit's comment atop the next claim (a promoted entry's)
    for block in blocks:
        if block.kind == "heading":
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
            provenance = None
            continue
        if block.kind == "hr":
            provenance = None
            continue
        if block.kind == "html_block" and not strip_kit_comments("\n".join(lines[block.start:block.end])).strip():
            # `<!-- kit:promoted key=… -->` belongs to the entry below it: its chunk maps both lines,
            # and the day the entry is about is read off it (`chunk_day`)
            provenance = block
            continue
        headings = [t for _, t in stack]
        packer = _Packer(path, lines, max_tokens, overlap)
        atop = provenance is not None and provenance.end == block.start  # right above it, no blank line
        for part in (provenance, block) if atop else (block,):
            for unit in _units(part, lines, max_tokens):
                packer.add(unit, headings)
        provenance = None
        packer.flush(headings, overlap=False)
        chunks.extend(packer.chunks)
    return chunks
