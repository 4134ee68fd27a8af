"""File-system primitives: safe reads of regular files, confined path joins, hashes.

Writes (atomic, compare-and-swap) live in `kit.filewrite`, OS locks in `kit.locks`; both are
re-exported here, where the rest of Kit has always imported them from.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import unicodedata
from pathlib import Path

from kit.errors import DocumentError, PathEscapeError

MAX_TEXT_BYTES = 2 * 1024 * 1024  # workspace documents larger than this are refused
MAX_PATH_CHARS = 1024  # a tool path longer than this is refused before the OS sees it
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
# zero-width and direction marks: invisible in a path, so never part of a protected folder's name
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u200e\u200f\u202a\u202b\u202c\u202d\u202e"))


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists on this machine (one we may not signal exists too). Not a
    positive pid: no (os.kill(0, …) would ask about our own process group)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sha1_hex(data: str | bytes, length: int | None = None) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    digest = hashlib.sha1(raw).hexdigest()
    return digest[:length] if length else digest


def sha256_hex(data: str | bytes) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


# --------------------------------------------------------------------------- what a path is


def special_kind(mode: int) -> str | None:
    """'a FIFO (named pipe)', 'a socket', … for anything but a regular file; None for one."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def os_problem(exc: OSError, path: str | os.PathLike | None = None) -> str:
    """One human phrase for an OSError met while opening or statting a file."""
    code = exc.errno
    if code == errno.ELOOP:
        return "symlink loop (the link points back to itself); fix or remove the link"
    if code == errno.ENOENT:
        if path is not None and os.path.islink(path):
            return f"symlink to a missing file ({os.readlink(path)})"
        return "file not found"
    if code == errno.ENAMETOOLONG:
        return "file name too long"
    if code in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if code == errno.ENOTDIR:
        return "a folder in the path is a file"
    if code == errno.EISDIR:
        return "is a directory, expected a file"
    return exc.strerror or str(exc)


def _too_big(size: int, max_bytes: int) -> str:
    return (f"file is {size / (1024 * 1024):.1f} MiB, over the {max_bytes / (1024 * 1024):g} MiB limit "
            "for workspace documents; split it or move it out of the workspace")


def file_stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells one version of a file from another (mtime_ns, ctime_ns, size, inode): an edit
    always changes the ctime, which nothing can set back. As Document.stamp and a skill folder's
    FolderStamp record it."""
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def read_bytes(path: str | os.PathLike, *, max_bytes: int = MAX_TEXT_BYTES, display: str | None = None,
               cut: bool = False) -> bytes:
    """The bytes of a regular file (see `read_file`)."""
    return read_file(path, max_bytes=max_bytes, display=display, cut=cut)[0]


def read_file(path: str | os.PathLike, *, max_bytes: int = MAX_TEXT_BYTES, display: str | None = None,
              cut: bool = False) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file and its stat taken on the open file before the read (so a write
    during the read shows as a newer ctime), or DocumentError saying why not (`cut`: the first
    `max_bytes` of a bigger file instead of an error).

    FIFOs, sockets and devices are refused without being opened for a blocking read (a FIFO would
    block forever, /dev/zero never ends); the check is repeated on the opened descriptor, so a file
    swapped for a FIFO in between is refused too. Symlink loops and missing targets are named."""
    name = display or str(path)
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:
        raise DocumentError(os_problem(exc, path) if isinstance(exc, OSError) else "NUL byte in the path",
                            path=name) from None
    kind = special_kind(st.st_mode)
    if kind:
        raise DocumentError(f"is {kind}, expected a regular file; not read", path=name)
    if st.st_size > max_bytes and not cut:
        raise DocumentError(_too_big(st.st_size, max_bytes), path=name)
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise DocumentError("file disappeared while reading", path=name) from None
        raise DocumentError(os_problem(exc, path), path=name) from None
    try:
        st = os.fstat(fd)
        kind = special_kind(st.st_mode)
        if kind:
            raise DocumentError(f"is {kind}, expected a regular file; not read", path=name)
        chunks: list[bytes] = []
        total = 0
        while True:  # read to the end, never past the limit (the file may grow while we read)
            # asked for what the stat says is left (plus one, to see the end): a read buffer of
            # the limit's size, allocated and freed per file, made a cold process's first reads 2x slower
            want = max(st.st_size - total + 1, 1 << 16)
            chunk = os.read(fd, min(want, 1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                if cut:
                    return b"".join(chunks)[:max_bytes], st
                raise DocumentError(_too_big(total, max_bytes), path=name)
        return b"".join(chunks), st
    except OSError as exc:
        raise DocumentError(os_problem(exc, path), path=name) from None
    finally:
        os.close(fd)


# every byte but the control characters (below 32, save tab, newline, form feed, carriage return):
# deleting these leaves the control characters, counted in C rather than a byte at a time
_NOT_CONTROL = bytes(b for b in range(256) if not (b < 32 and b not in (9, 10, 12, 13)))


def looks_binary(raw: bytes) -> bool:
    """NUL bytes or mostly control characters; a stray bad byte in text is not 'binary'."""
    sample = raw[:8192]
    if b"\x00" in sample:
        return True
    if not sample:
        return False
    control = len(sample.translate(None, _NOT_CONTROL))
    return control / len(sample) > 0.3


def decode_text(raw: bytes, *, display: str) -> str:
    """UTF-8 text (a leading BOM dropped), or DocumentError naming the line of the first bad byte."""
    if looks_binary(raw):
        raise DocumentError(f"binary file ({len(raw)} bytes), expected UTF-8 text", path=display)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DocumentError(f"not valid UTF-8 (byte {exc.start})", path=display, line=line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def read_text(path: str | os.PathLike, *, max_bytes: int = MAX_TEXT_BYTES, display: str | None = None) -> str:
    """Read a UTF-8 text file or raise DocumentError saying why it cannot be used."""
    name = display or str(path)
    return decode_text(read_bytes(path, max_bytes=max_bytes, display=name), display=name)


# --------------------------------------------------------------------------- confined paths


def _resolve(path: Path, rel: str) -> Path:
    try:
        return path.resolve()
    except RuntimeError:  # Python 3.11 reports a symlink loop this way
        raise DocumentError("symlink loop (a link in the path points back to itself)", path=rel) from None
    except OSError as exc:
        raise DocumentError(os_problem(exc, path), path=rel) from None


def _plain(name: str) -> str:
    """A path part as it would compare on a forgiving file system (case, width, invisible marks)."""
    return unicodedata.normalize("NFKC", name.translate(_INVISIBLE)).casefold()


def check_path_text(rel: str) -> None:
    """Refuse what no file name may hold before the OS sees it: NUL bytes, absurd lengths."""
    if "\x00" in rel:
        shown = rel.replace("\x00", "\\0")
        raise PathEscapeError(f"a NUL byte is not allowed in a path: {shown}")
    if len(rel) > MAX_PATH_CHARS:
        raise PathEscapeError(f"path is {len(rel)} characters long, over the {MAX_PATH_CHARS}-character limit")


def safe_join(root: str | os.PathLike, relative: str | os.PathLike, *,
              protected: tuple[str, ...] = ()) -> Path:
    """Join `relative` under `root`, refusing absolute paths, `..`, NUL bytes and symlinks that lead out.

    `protected` names top-level folders (".kit", ".git") the path may not lead into, neither
    directly, nor through a symlink, nor by a look-alike name (case, full-width letters, invisible
    characters)."""
    base = _resolve(Path(root), str(root))
    rel = str(relative)
    if not rel or rel.strip() == "":
        raise PathEscapeError("empty path")
    check_path_text(rel)
    if os.path.isabs(rel) or rel.startswith("~"):
        raise PathEscapeError(f"absolute paths are not allowed: {rel}")
    parts = Path(rel).parts
    if ".." in parts:
        raise PathEscapeError(f"'..' is not allowed in paths: {rel}")
    if any(_plain(p) in (".", "..") and p not in (".", "..") for p in parts):
        raise PathEscapeError(f"'..' written with look-alike characters is not allowed in paths: {rel}")
    candidate = base.joinpath(*parts)
    resolved = _resolve(candidate, rel)
    if resolved != base and base not in resolved.parents:
        raise PathEscapeError(f"{rel} resolves outside {base} (symlink?)")
    if protected:
        guarded = {_plain(p) for p in protected}
        written = _plain(parts[0]) if parts else ""
        landed = resolved.relative_to(base).parts[:1]
        if written in guarded or (landed and _plain(landed[0]) in guarded):
            name = landed[0] if landed and _plain(landed[0]) in guarded else parts[0]
            via = "" if written in guarded and written == _plain(name) else f" leads into {name}/ through a symlink;"
            raise PathEscapeError(f"{rel}:{via} {name}/ holds machine state and is not writable by tools")
    return candidate


def leads_into(root: str | os.PathLike, relative: str | os.PathLike, folder: str) -> bool:
    """True when `relative` (under `root`) names the top-level `folder`, directly or by a look-alike
    name, or lands in it through a symlink. Call it on a path safe_join accepted."""
    base = _resolve(Path(root), str(root))
    parts = Path(relative).parts
    landed = _resolve(base.joinpath(*parts), str(relative)).relative_to(base).parts[:1]
    return any(_plain(p) == _plain(folder) for p in (*parts[:1], *landed))


def is_within(root: str | os.PathLike, path: str | os.PathLike) -> bool:
    """True when `path` (symlinks resolved) is `root` or below it; a symlink loop is not within."""
    # strings, not Path.resolve() and .parents: it runs once per document a workspace loads, and
    # the Path objects were 40 % of it; realpath does not raise on a loop, a stat says ELOOP (as
    # Path.resolve finds out)
    try:
        base = os.path.realpath(root)
        resolved = os.path.realpath(path)
    except OSError:
        return False
    for end in (base, resolved):
        try:
            os.stat(end)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return False
    return resolved == base or resolved.startswith(base if base.endswith(os.sep) else base + os.sep)


def no_link_below(root: str | os.PathLike, rel: str) -> bool:
    """True when `rel` (relative, "/"-separated names) reaches an existing entry under `root`
    through no symlink: each of its components is lstat'd and none is a link. It is then inside
    `root`, whatever `root` itself resolves to — what `is_within` says, in a stat per component
    where `is_within` resolves root's path and the whole path from / (a workspace opening checks
    every document it loads). False also when it cannot tell (a missing component, "..", a system
    whose paths have other separators or drive letters: POSIX only)."""
    if os.sep != "/" or os.altsep:
        return False
    parts = rel.split("/")
    if os.path.isabs(rel) or any(p in ("", ".", "..") for p in parts):
        return False
    path = os.fspath(root)
    for part in parts:
        path = os.path.join(path, part)
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return False
        except OSError:
            return False
    return True


def is_symlink_loop(path: str | os.PathLike) -> bool:
    """True when resolving `path` runs into a symlink loop."""
    try:
        Path(path).resolve()
    except RuntimeError:  # Python 3.11's way of saying ELOOP
        return True
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


# Writes and locks live beside this module; the rest of Kit has always imported them from here.
_ELSEWHERE = {
    "ConflictError": "kit.errors",
    "FileState": "kit.filewrite",
    "atomic_write": "kit.filewrite",
    "create_file": "kit.filewrite",
    "file_state": "kit.filewrite",
    "update_file": "kit.filewrite",
    "write_file": "kit.filewrite",
    "LockFile": "kit.locks",
    "locked": "kit.locks",
}


def __getattr__(name: str):
    # lazy (PEP 562): kit.filewrite imports this module's readers
    if name in _ELSEWHERE:
        import importlib

        return getattr(importlib.import_module(_ELSEWHERE[name]), name)
    raise AttributeError(f"module 'kit.fsutil' has no attribute {name!r}")


def file_signature(path: Path) -> list[int] | None:
    """[size, mtime in ns] of a file, None when it is missing: enough to tell a file changed since
    it was checked (a cache vouching for a copy, a manifest for its sources)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns]
