"""Writes that never lose a person's edit: compare-and-swap on files people also edit.

    update_file(path, change)     read → change(text) → swap the result in only if the file still
                                  holds what change() saw; if it moved on, read again and re-apply
                                  change (a merge with the newer text); ConflictError after N tries
    write_file(path, data, expected=state)   one conditional swap (ConflictError when it moved on)
    create_file(path, data)       create only if absent (ConflictError when it exists)
    remove_file(path, expected=state)   remove only if it still holds that version
    atomic_write(path, data)      an unconditional atomic replace, for files only Kit writes

How one swap works: the new bytes go to a temp file beside the target (fsynced, with the target's
mode and owner), then the two names are exchanged atomically (Linux renameat2 RENAME_EXCHANGE,
macOS renamex_np RENAME_SWAP). The temp name now holds exactly what the target held at that
instant: if that is not the version the change was based on, somebody wrote in between, so the
names are exchanged back (their text is the file again, untouched) and the caller re-reads. A
re-check right before the exchange keeps that rare. An in-place save (open, later write) that opened
the file before the exchange writes into the replaced version: that version is watched for
LATE_WRITE_S after the swap and, if it moves, given back and merged again. Where no exchange exists,
the re-check is followed by os.replace (a window of microseconds instead of the whole
read-compute-write).

Temp files are `.<name>.kit-<pid>-<random>.tmp`: ignored by the watcher, the snapshot and the index
(*.tmp), removed on every error, and one left by a killed process (kill -9) is removed by the next
write in that folder once its process is gone.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import random
import re
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kit.errors import ConflictError, DocumentError
from kit.fsutil import MAX_TEXT_BYTES, decode_text, pid_alive, read_bytes, sha1_hex, special_kind

DEFAULT_ATTEMPTS = 40
STALE_TEMP_S = 600.0  # a temp file this old is left over whatever its pid says
SETTLE_S = 0.02  # an empty or unterminated file is read again after this (doubling), in case a write is mid-way
LATE_WRITE_S = 0.05  # after a swap, how long the replaced version is watched for an in-place save still landing
_TEMP_RE = re.compile(r"^\..*\.kit-(\d+)-[0-9a-f]{8}\.tmp$")
_LEGACY_TEMP_RE = re.compile(r"^\.(.+)\.[a-z0-9_]{8}\.tmp$")  # tempfile.mkstemp names of older Kits
_ANY = object()  # write_file(expected=_ANY): no condition


def _read_umask() -> int:
    # os.umask can only be read by setting it; done once, at import, before any worker thread
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()

__all__ = ["ConflictError", "FileState", "Update", "atomic_write", "create_file", "file_state", "remove_file",
           "update_file", "write_file"]


@dataclass(frozen=True)
class FileState:
    """What a file held when it was read: its text (None: absent) and the sha1 of its bytes."""

    text: str | None
    digest: str | None


@dataclass(frozen=True)
class Update:
    before: FileState  # the version the written text was computed from
    text: str | None  # the file's text now
    wrote: bool
    attempts: int


# --------------------------------------------------------------------------- reading


def _digest_at(path: Path) -> str | None:
    """sha1 of the bytes at `path`; None when absent; a 'kind:' marker for anything not a regular file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    kind = special_kind(st.st_mode)
    if kind:
        return f"kind:{kind}"
    try:
        return sha1_hex(read_bytes(path, max_bytes=1 << 30))
    except DocumentError as exc:
        return f"unreadable:{exc.message}"


def file_state(path: str | os.PathLike, *, display: str | None = None, max_bytes: int = MAX_TEXT_BYTES,
               settle: bool = True) -> FileState:
    """Read a text file for a later `write_file(expected=...)`. DocumentError when it is not UTF-8
    text (a write must never be based on a lossy read).

    A file caught empty or cut mid-line may be another program's write in progress (it truncated,
    has not written yet): it is read again after a moment and used once it holds still (`settle`)."""
    name = display or str(path)
    p = Path(path)
    previous: bytes | None = None
    for attempt in range(6):
        try:
            raw = read_bytes(p, max_bytes=max_bytes, display=name)
        except DocumentError:
            if not os.path.lexists(p):
                return FileState(None, None)
            raise
        if not settle or raw.endswith(b"\n") or (raw == previous and raw):
            break
        previous = raw
        # an editor that truncated and was then descheduled (a loaded machine) may take a while
        time.sleep(SETTLE_S * 2 ** attempt)
    return FileState(decode_text(raw, display=name), sha1_hex(raw))


# --------------------------------------------------------------------------- the swap


@functools.cache
def _rename_call() -> tuple[str, Callable[..., int]] | None:
    """The libc call that renames with flags (atomic exchange / no-replace), or None."""
    import ctypes  # at the first write: commands that only read never load it

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    if sys.platform.startswith("linux") and hasattr(libc, "renameat2"):
        fn = libc.renameat2
        fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        fn.restype = ctypes.c_int
        return "linux", fn
    if sys.platform == "darwin" and hasattr(libc, "renamex_np"):
        fn = libc.renamex_np
        fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
        fn.restype = ctypes.c_int
        return "darwin", fn
    return None


_EXCHANGE = {"linux": 2, "darwin": 0x2}  # RENAME_EXCHANGE / RENAME_SWAP
_NOREPLACE = {"linux": 1, "darwin": 0x4}  # RENAME_NOREPLACE / RENAME_EXCL


def _rename_flags(src: Path, dst: Path, flags: dict[str, int]) -> bool:
    """Rename with a flag; False when this system or file system cannot (caller falls back)."""
    call = _rename_call()
    if call is None:
        return False
    system, fn = call
    a, b = os.fsencode(src), os.fsencode(dst)
    result = fn(-100, a, -100, b, flags[system]) if system == "linux" else fn(a, b, flags[system])  # -100: AT_FDCWD
    if result == 0:
        return True
    import ctypes

    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(code, os.strerror(code), str(dst))


def _temp_name(target: Path) -> Path:
    stem = target.name[:100]  # the temp name must stay under NAME_MAX
    return target.with_name(f".{stem}.kit-{os.getpid()}-{secrets.token_hex(4)}.tmp")


def sweep_temps(folder: Path) -> list[str]:
    """Remove temp files a killed writer left in `folder` (its process gone, or older than 10 min).
    Returns the names removed."""
    removed: list[str] = []
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not name.endswith(".tmp") or not name.startswith("."):
            continue
        match = _TEMP_RE.match(name)
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if match:
            stale = not pid_alive(int(match.group(1))) or age > STALE_TEMP_S
        else:
            legacy = _LEGACY_TEMP_RE.match(name)
            stale = bool(legacy) and age > STALE_TEMP_S and os.path.exists(os.path.join(folder, legacy.group(1)))
        if stale:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(name)
    return removed


def _target(path: str | os.PathLike) -> Path:
    """The real file behind `path`: a symlinked document is written where it lives, the link kept."""
    p = Path(path)
    return Path(os.path.realpath(p)) if os.path.islink(p) else p


def write_file(path: str | os.PathLike, data: str | bytes, *, expected: FileState | None | object = _ANY,
               mode: int | None = None, display: str | None = None) -> None:
    """Atomically replace `path` with `data`. With `expected` (a FileState from `file_state`, or None
    for "must not exist"), only if the file still holds that version: else ConflictError and the
    file is left exactly as the other writer left it."""
    target = _target(path)
    name = display or str(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    want = expected.digest if isinstance(expected, FileState) else expected  # None: must not exist
    folder = target.parent
    folder.mkdir(parents=True, exist_ok=True)
    sweep_temps(folder)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    if st is not None and special_kind(st.st_mode):
        raise DocumentError(f"is {special_kind(st.st_mode)}, expected a regular file; not written", path=name)
    if mode is None:
        # keep an existing file's mode; a new file gets what open() would give it
        mode = st.st_mode & 0o7777 if st is not None else 0o666 & ~_UMASK
    tmp = _temp_name(target)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            os.fchmod(fd, mode)
            if st is not None and hasattr(os, "geteuid") and os.geteuid() == 0 and \
                    (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
                with contextlib.suppress(OSError):
                    os.fchown(fd, st.st_uid, st.st_gid)  # root editing a user's file leaves it theirs
        finally:
            os.close(fd)
        if expected is _ANY:
            os.replace(tmp, target)
        elif want is None:
            _create_from(tmp, target, name)
        else:
            _swap_if(tmp, target, want, name, sha1_hex(raw))
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _conflict(name: str, what: str = "changed") -> ConflictError:
    return ConflictError(f"{what} while Kit was writing it; nothing was written", path=name)


def _create_from(tmp: Path, target: Path, name: str) -> None:
    try:
        if _rename_flags(tmp, target, _NOREPLACE):
            return
    except FileExistsError:
        raise _conflict(name, "was created by someone else") from None
    try:  # a hard link also fails when the name exists; then the temp is removed by the caller
        os.link(tmp, target)
    except FileExistsError:
        raise _conflict(name, "was created by someone else") from None
    except OSError:  # no hard links here (some network / FAT file systems): last check, then rename
        if os.path.lexists(target):
            raise _conflict(name, "was created by someone else") from None
        os.replace(tmp, target)


def _fd_stamp(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_size, st.st_mtime_ns


def _digest_fd(fd: int) -> str:
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return sha1_hex(b"".join(chunks))


def _swap_if(tmp: Path, target: Path, want: str, name: str, ours: str) -> None:
    if _digest_at(target) != want:  # the cheap re-check: most conflicts stop here
        raise _conflict(name)
    try:
        old_fd = os.open(target, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise _conflict(name, "was removed") from None
    try:
        try:
            exchanged = _rename_flags(tmp, target, _EXCHANGE)
        except FileNotFoundError:  # the target was removed meanwhile
            raise _conflict(name, "was removed") from None
        if not exchanged:
            os.replace(tmp, target)  # no atomic exchange on this system: the re-check above is all we have
            return
        # `tmp` now holds what `target` held at the instant of the exchange
        if _digest_at(tmp) != want or os.fstat(old_fd).st_ino != os.lstat(tmp).st_ino:
            # someone wrote in between: give them their file back exactly as they left it
            with contextlib.suppress(FileNotFoundError):
                _rename_flags(tmp, target, _EXCHANGE)
            raise _conflict(name)
        # An in-place save (open, then write) that opened the file before the exchange writes into the
        # version now at `tmp`, which is about to be deleted: watch it a moment; if it moves, that save
        # is given back (as long as the target still holds Kit's bytes) and the caller merges again.
        seen = _fd_stamp(old_fd)
        time.sleep(LATE_WRITE_S)
        if _fd_stamp(old_fd) != seen or _digest_fd(old_fd) != want:
            if _digest_at(target) == ours:
                with contextlib.suppress(FileNotFoundError):
                    _rename_flags(tmp, target, _EXCHANGE)
            raise _conflict(name)
    finally:
        os.close(old_fd)


def create_file(path: str | os.PathLike, data: str | bytes, *, display: str | None = None) -> None:
    """Create `path` with `data` atomically; ConflictError when it already exists (nothing changed)."""
    if os.path.lexists(path):
        raise _conflict(display or str(path), "already exists")
    write_file(path, data, expected=None, display=display)


def remove_file(path: str | os.PathLike, *, expected: FileState, display: str | None = None) -> None:
    """Remove `path` only if it still holds `expected`: else ConflictError and the file is left as the
    other writer left it. The file is first renamed aside (atomic), its content checked there and
    watched LATE_WRITE_S for an in-place save still landing, then deleted or given back."""
    p = Path(path)  # a symlink is removed itself, never the file it points to
    name = display or str(path)
    if _digest_at(p) != expected.digest:
        raise _conflict(name)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0) |
                     getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise _conflict(name, "was removed") from None
    except OSError:  # a symlink (O_NOFOLLOW): nothing to watch, the link itself is what goes
        fd = None
    aside = _temp_name(p)
    try:
        try:
            os.rename(p, aside)
        except FileNotFoundError:
            raise _conflict(name, "was removed") from None
        seen = _fd_stamp(fd) if fd is not None else None
        same = _digest_at(aside) == expected.digest and (fd is None or os.fstat(fd).st_ino == os.lstat(aside).st_ino)
        if same and fd is not None:
            time.sleep(LATE_WRITE_S)
            same = _fd_stamp(fd) == seen and _digest_fd(fd) == expected.digest
        if not same:
            # someone wrote in between: their file goes back where it was
            try:
                _create_from(aside, p, name)
            except ConflictError:  # and the name was taken again meanwhile: keep theirs beside it
                kept = p.with_name(f"{p.name[:100]}.kept-{secrets.token_hex(4)}")
                os.rename(aside, kept)
                raise ConflictError(f"was written twice while Kit removed it; the earlier version is kept "
                                    f"as {kept.name}", path=name) from None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(aside)  # the hard-link fallback leaves the aside name behind
            raise _conflict(name)
        os.unlink(aside)
    finally:
        if fd is not None:
            os.close(fd)


def atomic_write(path: str | os.PathLike, data: str | bytes, *, mode: int | None = None) -> None:
    """Write via a temp file in the same folder, fsync, then os.replace: readers never see a torn
    file. Unconditional: for files only Kit writes (state, caches, generated units)."""
    write_file(path, data, mode=mode)


def update_file(path: str | os.PathLike, change: Callable[[str | None], str | None], *,
                display: str | None = None, attempts: int = DEFAULT_ATTEMPTS,
                write: Callable[[str, FileState], None] | None = None, max_bytes: int = MAX_TEXT_BYTES) -> Update:
    """Apply `change` (current text or None → new text, or None for "leave it") to the file as it is
    at the moment of writing: when another writer got in between, read their version and apply
    `change` to it again. `change` must be a merge (pure, safe to call again on newer text).
    `write(text, state)` does the conditional swap (default `write_file(path, text, expected=state)`;
    the workspace passes its own door)."""
    name = display or str(path)
    for attempt in range(1, attempts + 1):
        state = file_state(path, display=name, max_bytes=max_bytes)
        new = change(state.text)
        if new is None or new == state.text:
            return Update(state, state.text, False, attempt)
        try:
            if write is not None:
                write(new, state)
            else:
                write_file(path, new, expected=state, display=name)
        except ConflictError:
            # let the other writer finish: a burst of saves passes, a person's next save is seconds away
            time.sleep(random.uniform(0, min(0.1, 0.001 * 2 ** min(attempt, 7))))
            continue
        return Update(state, new, True, attempt)
    raise ConflictError(f"kept changing while Kit tried to write it ({attempts} attempts); nothing was "
                        "written. Try again.", path=name)
