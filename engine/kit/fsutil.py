"""File-system primitives: atomic writes, confined path joins, exclusive lock files, safe reads."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from kit.errors import BusyError, DocumentError, PathEscapeError

MAX_TEXT_BYTES = 2 * 1024 * 1024  # workspace documents larger than this are refused


def _read_umask() -> int:
    # os.umask can only be read by setting it; done once, at import, before any worker thread
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def sha1_hex(data: str | bytes, length: int | None = None) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    digest = hashlib.sha1(raw).hexdigest()
    return digest[:length] if length else digest


def sha256_hex(data: str | bytes) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def atomic_write(path: str | os.PathLike, data: str | bytes, *, mode: int | None = None) -> None:
    """Write via a temp file in the same folder, fsync, then os.replace: readers never see a torn file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if mode is None:
        # keep an existing file's mode; a new file gets what open() would give it (mkstemp's
        # temp file is 0600, which would otherwise become the new file's mode)
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o666 & ~_UMASK
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def safe_join(root: str | os.PathLike, relative: str | os.PathLike) -> Path:
    """Join `relative` under `root`, refusing absolute paths, `..` and symlinks that lead out."""
    base = Path(root).resolve()
    rel = str(relative)
    if not rel or rel.strip() == "":
        raise PathEscapeError("empty path")
    if os.path.isabs(rel) or rel.startswith("~"):
        raise PathEscapeError(f"absolute paths are not allowed: {rel}")
    parts = Path(rel).parts
    if ".." in parts:
        raise PathEscapeError(f"'..' is not allowed in paths: {rel}")
    candidate = base.joinpath(*parts)
    resolved = candidate.resolve()
    if resolved != base and base not in resolved.parents:
        raise PathEscapeError(f"{rel} resolves outside {base} (symlink?)")
    return candidate


def is_within(root: str | os.PathLike, path: str | os.PathLike) -> bool:
    base = Path(root).resolve()
    resolved = Path(path).resolve()
    return resolved == base or base in resolved.parents


def looks_binary(raw: bytes) -> bool:
    """NUL bytes or mostly control characters; a stray bad byte in text is not 'binary'."""
    sample = raw[:8192]
    if b"\x00" in sample:
        return True
    if not sample:
        return False
    control = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13))
    return control / len(sample) > 0.3


def read_text(path: str | os.PathLike, *, max_bytes: int = MAX_TEXT_BYTES, display: str | None = None) -> str:
    """Read a UTF-8 text file or raise DocumentError saying why it cannot be used."""
    p = Path(path)
    name = display or str(p)
    if p.is_dir():
        raise DocumentError("is a directory, expected a file", path=name)
    try:
        size = p.stat().st_size
    except FileNotFoundError:
        raise DocumentError("file not found", path=name) from None
    if size > max_bytes:
        raise DocumentError(
            f"file is {size / (1024 * 1024):.1f} MiB, over the {max_bytes // (1024 * 1024)} MiB limit "
            "for workspace documents; split it or move it out of the workspace",
            path=name,
        )
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise DocumentError("file disappeared while reading", path=name) from None
    except PermissionError:
        raise DocumentError("permission denied", path=name) from None
    if looks_binary(raw):
        raise DocumentError(f"binary file ({size} bytes), expected UTF-8 text", path=name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DocumentError(f"not valid UTF-8 (byte {exc.start})", path=name, line=line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LockFile:
    """An exclusive lock file holding `pid:timestamp`.

    A lock whose pid is dead, or older than `stale_after` seconds, is taken over.
    """

    def __init__(self, path: str | os.PathLike, *, stale_after: float = 15 * 60):
        self.path = Path(path)
        self.stale_after = stale_after
        self.held = False

    def holder(self) -> tuple[int, float] | None:
        try:
            pid_text, _, ts_text = self.path.read_text().strip().partition(":")
            return int(pid_text), float(ts_text)
        except (FileNotFoundError, ValueError):
            return None

    def is_stale(self) -> bool:
        info = self.holder()
        if info is None:
            return self.path.exists()  # unreadable/garbled lock
        pid, started = info
        # wall time, not kit.clock: staleness is about real processes, not simulated days
        return not _pid_alive(pid) or (time.time() - started) > self.stale_after

    def try_acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if self.is_stale():
                    with contextlib.suppress(FileNotFoundError):
                        self.path.unlink()
                    continue
                return False
            with os.fdopen(fd, "w") as handle:
                handle.write(f"{os.getpid()}:{time.time():.3f}")
            self.held = True
            return True
        return False

    def acquire(self, *, wait: float = 0.0, poll: float = 0.1, what: str = "lock") -> None:
        deadline = time.monotonic() + wait
        while True:
            if self.try_acquire():
                return
            if time.monotonic() >= deadline:
                info = self.holder()
                who = f" by pid {info[0]}" if info else ""
                raise BusyError(f"{what} is held{who} ({self.path}); try again later")
            time.sleep(poll)

    def release(self) -> None:
        if self.held:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.held = False

    def __enter__(self) -> LockFile:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def locked(path: str | os.PathLike, *, wait: float = 0.0, what: str = "lock") -> Iterator[LockFile]:
    lock = LockFile(path)
    lock.acquire(wait=wait, what=what)
    try:
        yield lock
    finally:
        lock.release()
