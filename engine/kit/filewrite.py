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
re-check right before the exchange keeps that rare. Where no exchange exists, the re-check is
followed by os.replace (a window of microseconds instead of the whole read-compute-write).

In-place saves (open, later write, close: many scripts and editors) are the hard case: a save that
opened the file before the exchange writes into the version Kit replaced, however late it writes.
So Kit asks the kernel whether anyone holds the file open for writing (a read lease can be taken
only when nobody does: Linux F_SETLEASE), waits for such a save to finish (at most WRITERS_WAIT_S)
before the exchange, and after it watches the replaced version until nobody holds it open for
writing and at least IN_FLIGHT_S: what a lease cannot see is an open() still under way at the
exchange (the path looked up, write access not taken yet), a window of microseconds that a
descheduled process stretches (bench/stress/late_window.py measures it). Where the kernel cannot
tell who holds a file open, the watch lasts LATE_WRITE_S. A save that landed in it is brought back:

    | the in-place save ...                       | what Kit does                                   |
    |---------------------------------------------|-------------------------------------------------|
    | wrote and closed before Kit's re-check      | conflict: the caller reads it and merges again  |
    | is open for writing at the re-check         | waits for the close; it changed the file:       |
    |   (opened, not written or closed yet)       |   conflict, the caller merges again; else swap  |
    | opened between the re-check and the         | the replaced version is watched until the save  |
    |   exchange, writes after it (held up)       |   closes; if it wrote: given back (below)       |
    | wrote between the re-check and the exchange | the exchange hands that version back: seen,     |
    |                                             |   exchanged back, conflict                      |
    | opened the path after the exchange          | it writes into Kit's version: the file; nothing |
    |                                             |   to do (its text is what its editor saved)     |
    | opened Kit's version in the instant it was  | Kit's version is watched the same way and a     |
    |   the file before an exchange back          |   save into it carried onto the file            |

Given back: when the file still holds Kit's bytes, the late save becomes the file again (as if Kit
had not written) and the caller gets a conflict and merges again, as for any other concurrent
edit. When someone wrote the file after Kit meanwhile, the late save's change is carried onto it
line by line (kit.textmerge.carry); where that cannot be done cleanly (the same lines changed),
the late save is kept beside the file as `<name>.kept-<hex>` so that nothing is lost. Without
leases (macOS, another user's file, some network file systems) only the LATE_WRITE_S watch is
left: a save held up longer than that is lost there. With leases, what is left is a process that
holds the file open for writing longer than WRITERS_WAIT_S and writes after that.

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
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kit.errors import ConflictError, DocumentError
from kit.fsutil import MAX_TEXT_BYTES, decode_text, pid_alive, read_bytes, sha1_hex, special_kind
from kit.textmerge import carry

try:
    import fcntl
except ImportError:  # not POSIX: no leases, the timed watch only
    fcntl = None  # type: ignore[assignment]

DEFAULT_ATTEMPTS = 40
STALE_TEMP_S = 600.0  # a temp file this old is left over whatever its pid says
SETTLE_S = 0.02  # an empty or unterminated file is read again after this (doubling), in case a write is mid-way
LATE_WRITE_S = 0.05  # without leases, the replaced version is watched this long for an in-place save
# with leases, a save holding the file open is seen however long it takes; the watch's minimum only
# covers an open() under way at the swap. open() took at most 12 ms of wall time in 1M calls beside
# 4 busy processes on 2 cores (the worst seen; a process descheduled in it, ~4 ms ticks), so 20 ms
IN_FLIGHT_S = 0.02
WRITERS_WAIT_S = 10.0  # the longest Kit waits for a process holding the file open for writing to close it
_LATE_DEPTH = 4  # a late save brought back is itself a write: how many nested late saves are followed
_TEMP_RE = re.compile(r"^\..*\.kit-(\d+)-[0-9a-f]{8}\.tmp$")
_LEGACY_TEMP_RE = re.compile(r"^\.(.+)\.[a-z0-9_]{8}\.tmp$")  # tempfile.mkstemp names of older Kits
_ANY = object()  # write_file(expected=_ANY): no condition
_BOM = b"\xef\xbb\xbf"


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
    bom: bool = False  # the bytes start with a UTF-8 BOM (`text` never holds it)


@dataclass(frozen=True)
class Update:
    before: FileState  # the version the written text was computed from
    text: str | None  # the file's text now
    wrote: bool
    attempts: int
    digest: str | None = None  # sha1 of the bytes written (a kept BOM included): the file's `FileState.digest`


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
    return FileState(decode_text(raw, display=name), sha1_hex(raw), raw.startswith(_BOM))


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
    _write(path, data.encode("utf-8") if isinstance(data, str) else data, expected, mode, display or str(path), 0)


def _write(path: str | os.PathLike, raw: bytes, expected: FileState | None | object, mode: int | None,
           name: str, depth: int) -> None:
    target = _target(path)
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
            _swap_if(tmp, target, expected, name, raw, depth)  # type: ignore[arg-type]
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


def _read_fd(fd: int) -> bytes:
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _writers(fd: int) -> bool | None:
    """Whether any process (this one included) holds the file behind `fd` (opened read-only) open
    for writing: the kernel grants a read lease only when none does (Linux F_SETLEASE). None when
    this system cannot tell (no leases; another owner's file; a file system without them)."""
    if fcntl is None or not hasattr(fcntl, "F_SETLEASE"):
        return None
    try:
        # an open for writing in the instant the lease is held signals its holder: SIGURG, which is
        # ignored by default (the default, SIGIO, would end Kit), and the opener waits that instant
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    except OSError as exc:
        return True if exc.errno == errno.EAGAIN else None
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
    return False


def _wait_for_writers(fd: int, *, until: float = 0.0, blind_until: float | None = None) -> None:
    """Return once nobody holds `fd`'s file open for writing and the clock (monotonic) is past
    `until`; at most WRITERS_WAIT_S. Where that cannot be told, just wait until `blind_until`
    (default `until`)."""
    deadline = time.monotonic() + WRITERS_WAIT_S
    pause = 0.001
    while True:
        busy = _writers(fd)
        now = time.monotonic()
        if busy is None:
            blind = until if blind_until is None else blind_until
            if now < blind:
                time.sleep(blind - now)
            return
        if (not busy and now >= until) or now >= deadline:
            return
        if busy:  # a save under way: look again soon, less often the longer it takes
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        else:
            time.sleep(until - now)


def _settled(fd: int, digest: str, *, since: float) -> bytes | None:
    """The version behind `fd` (which held `digest`) was just replaced at `since`: once no in-place
    save is still under way in it, its bytes if one landed there, else None."""
    _wait_for_writers(fd, until=since + IN_FLIGHT_S, blind_until=since + LATE_WRITE_S)
    data = _read_fd(fd)
    return None if sha1_hex(data) == digest else data


def _keep_beside(target: Path, data: bytes) -> Path:
    kept = target.with_name(f"{target.name[:100]}.kept-{secrets.token_hex(4)}")
    fd = os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    return kept


def _bring_back(target: Path, name: str, base: bytes, late: bytes, ours: str, depth: int) -> bool:
    """An in-place save turned a version Kit had just replaced from `base` into `late`: make that
    save in the file as it is now. True when it was given back whole: the file still held Kit's
    bytes (sha1 `ours`), so `late` is the file again and Kit's own change is not in it."""
    if depth < _LATE_DEPTH:
        for _ in range(DEFAULT_ATTEMPTS):
            try:
                now = file_state(target, display=name, max_bytes=1 << 30)
            except DocumentError:
                break
            try:
                if now.digest == ours:  # nobody wrote since Kit: their save is the file, as if Kit had not written
                    _write(target, late, now, None, name, depth + 1)
                    return True
                merged = None
                with contextlib.suppress(UnicodeDecodeError):
                    if now.text is not None:
                        merged = carry(base.decode("utf-8"), late.decode("utf-8"), now.text)
                if merged is None:
                    break  # the same lines changed since: keep their save beside the file
                if merged != now.text:
                    _write(target, merged.encode("utf-8"), now, None, name, depth + 1)
                return False
            except ConflictError:
                continue  # the file moved on again: look at the newer version
    _keep_beside(target, late)
    return False


def _swap_if(tmp: Path, target: Path, expected: FileState, name: str, raw: bytes, depth: int) -> None:
    want = expected.digest
    assert want is not None
    if _digest_at(target) != want:  # the cheap re-check: most conflicts stop here
        raise _conflict(name)
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        old_fd = os.open(target, flags)
    except FileNotFoundError:
        raise _conflict(name, "was removed") from None
    try:
        # an in-place save under way (opened for writing, not closed yet): let it finish, look again
        _wait_for_writers(old_fd)
        base = _read_fd(old_fd)
        if sha1_hex(base) != want:
            raise _conflict(name)
        new_fd = os.open(tmp, flags)
        try:
            try:
                exchanged = _rename_flags(tmp, target, _EXCHANGE)
            except FileNotFoundError:  # the target was removed meanwhile
                raise _conflict(name, "was removed") from None
            if not exchanged:
                os.replace(tmp, target)  # no atomic exchange on this system: the re-check above is all we have
                return
            swapped = time.monotonic()
            # `tmp` now holds what `target` held at the instant of the exchange
            if _digest_at(tmp) != want or os.fstat(old_fd).st_ino != os.lstat(tmp).st_ino:
                # someone wrote in between: give them their file back exactly as they left it
                with contextlib.suppress(FileNotFoundError):
                    _rename_flags(tmp, target, _EXCHANGE)
                late = _settled(new_fd, sha1_hex(raw), since=swapped)  # Kit's version was the file an instant
                if late is not None:
                    _bring_back(target, name, raw, late, sha1_hex(raw), depth)
                raise _conflict(name)
            # an in-place save that opened the file before the exchange writes into the version now
            # at `tmp`, however late: watched until no such save is under way, then brought back
            late = _settled(old_fd, want, since=swapped)
            if late is not None and _bring_back(target, name, base, late, sha1_hex(raw), depth):
                raise _conflict(name)
        finally:
            os.close(new_fd)
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
    watched for an in-place save still landing (as a swap's replaced version), then deleted or given
    back."""
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
        renamed = time.monotonic()
        same = _digest_at(aside) == expected.digest and (fd is None or os.fstat(fd).st_ino == os.lstat(aside).st_ino)
        if same and fd is not None:  # an in-place save still landing goes back too (see the module's table)
            same = _settled(fd, expected.digest, since=renamed) is None  # type: ignore[arg-type]
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


def same_conventions(before: FileState, text: str) -> str:
    """`text` with the line endings of the file it changes: a change written with "\n" into a
    file of "\r\n" lines (Windows editors) rewrote every line of it. (Its BOM is kept by the write.)"""
    old = before.text or ""
    if "\r\n" in old and old.count("\n") == old.count("\r\n"):
        return text.replace("\r\n", "\n").replace("\n", "\r\n")
    return text


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
        if new is not None and state.text is not None:
            new = same_conventions(state, new)
        if new is None or new == state.text:
            return Update(state, state.text, False, attempt, state.digest)
        data = "\ufeff" + new if state.bom else new
        try:
            if write is not None:
                write(data, state)
            else:
                write_file(path, data, expected=state, display=name)
        except ConflictError:
            # let the other writer finish: a burst of saves passes, a person's next save is seconds away
            time.sleep(random.uniform(0, min(0.1, 0.001 * 2 ** min(attempt, 7))))
            continue
        return Update(state, new, True, attempt, sha1_hex(data))
    raise ConflictError(f"kept changing while Kit tried to write it ({attempts} attempts); nothing was "
                        "written. Try again.", path=name)
