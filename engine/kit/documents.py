"""Markdown (+ YAML frontmatter) and template documents, loaded with file:line errors."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kit.errors import DocumentError
from kit.fsutil import decode_text, file_stamp, read_file, sha1_hex
from kit.yamlsafe import NotAMapping, YamlError, load_mapping


@dataclass(frozen=True)
class Document:
    name: str  # workspace-relative POSIX path
    text: str  # the whole file
    body: str  # the text after the frontmatter
    meta: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    body_line: int = 1  # 1-based line where `body` starts
    hash: str = ""
    size: int = 0
    mtime: float = 0.0
    # the file's (mtime_ns, ctime_ns, size, inode) before it was read: the version `text` is, as a
    # FolderStamp entry records it (None when not read from a file), and when that stat was taken
    # (time.time_ns(): the filesystem's clock). A stat taken within the clock's tick of a change
    # cannot tell that version from a same-size edit right after it (see skills.scanner.RACY_NS).
    stamp: tuple[int, int, int, int] | None = None
    stamped_ns: int = 0


def split_frontmatter(text: str, display: str) -> tuple[dict[str, Any], str, int]:
    """Return (metadata, body, body_line). Broken YAML raises DocumentError with its line."""
    if not text.startswith("---"):
        return {}, text, 1
    first_line_end = text.find("\n")
    if text[:first_line_end if first_line_end >= 0 else None].strip() != "---":
        return {}, text, 1
    lines = text.split("\n")
    close = None
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            close = index
            break
    if close is None:
        raise DocumentError("frontmatter starts with '---' but is never closed", path=display, line=1)
    try:  # bounded: depth, aliases, string size, huge integers, surrogates (see kit.yamlsafe)
        meta, _ = load_mapping("\n".join(lines[1:close]), line_offset=1)  # +1 for the opening ---
    except NotAMapping:
        raise DocumentError("frontmatter must be a mapping of keys", path=display, line=2) from None
    except YamlError as exc:
        raise DocumentError(f"invalid frontmatter YAML: {exc.message}", path=display, line=exc.line) from None
    body = "\n".join(lines[close + 1 :])
    return dict(meta), body, close + 2


def load_document(root: Path, rel: str, *, parse_frontmatter: bool = True) -> Document:
    """Load one workspace document; raise DocumentError naming the file (and line)."""
    return read_document(root / rel, rel, parse_frontmatter=parse_frontmatter)


def read_document(path: Path, name: str, *, parse_frontmatter: bool = True) -> Document:
    """Read a document from `path`, named (and its errors located) by `name`."""
    stamped_ns = time.time_ns()
    raw, st = read_file(path, display=name)
    text = decode_text(raw, display=name)
    if parse_frontmatter:
        meta, body, body_line = split_frontmatter(text, name)
    else:
        meta, body, body_line = {}, text, 1
    return Document(
        name=name,
        text=text,
        body=body,
        meta=MappingProxyType(meta),
        body_line=body_line,
        hash=sha1_hex(text),
        size=len(text.encode("utf-8")),
        mtime=st.st_mtime,
        stamp=file_stamp(st),
        stamped_ns=stamped_ns,
    )


def rel_posix(root: Path, path: Path) -> str:
    return Path(os.path.relpath(path, root)).as_posix()
