"""Atomic writes, confined joins, lock files."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kit.errors import BusyError, PathEscapeError
from kit.fsutil import LockFile, atomic_write, read_text, safe_join


def test_atomic_write_replaces_and_keeps_mode(tmp_path: Path):
    target = tmp_path / "a" / "f.md"
    atomic_write(target, "one")
    os.chmod(target, 0o600)
    atomic_write(target, "two")
    assert target.read_text() == "two"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.md"]  # no temp left behind


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_atomic_write_gives_a_new_file_the_umask_mode(tmp_path: Path, umask: int, mode: int):
    """Regression: new files came out 0600 (the temp file's mode) whatever the umask."""
    target = tmp_path / "new.md"
    code = f"import os; os.umask({umask}); from kit.fsutil import atomic_write; atomic_write({str(target)!r}, 'x')"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert target.stat().st_mode & 0o777 == mode


@pytest.mark.parametrize("bad", ["../x", "a/../../x", "/etc/passwd", "~/x", ""])
def test_safe_join_refuses_escapes(tmp_path: Path, bad: str):
    with pytest.raises(PathEscapeError):
        safe_join(tmp_path, bad)


def test_safe_join_refuses_symlink_out(tmp_path: Path):
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "link")
    with pytest.raises(PathEscapeError, match="outside"):
        safe_join(root, "link/secret.txt")
    assert safe_join(root, "notes/a.md") == root.resolve() / "notes" / "a.md"


def test_read_text_strips_bom(tmp_path: Path):
    f = tmp_path / "x.md"
    f.write_bytes(b"\xef\xbb\xbfhello")
    assert read_text(f) == "hello"


def test_lock_is_exclusive_and_released(tmp_path: Path):
    path = tmp_path / "locks" / "dream.lock"
    first = LockFile(path)
    assert first.try_acquire()
    pid, _ = first.holder()
    assert pid == os.getpid()
    with pytest.raises(BusyError, match=f"held by pid {os.getpid()}"):
        LockFile(path).acquire(wait=0.2, what="dream lock")
    first.release()
    assert not path.exists()
    with LockFile(path):
        assert path.exists()


def test_lock_of_a_dead_process_is_stale(tmp_path: Path):
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(proc.stdout)
    path = tmp_path / "dream.lock"
    path.write_text(f"{dead_pid}:{time.time()}")
    lock = LockFile(path)
    assert lock.is_stale()
    assert lock.try_acquire()


def test_old_lock_is_stale(tmp_path: Path):
    path = tmp_path / "dream.lock"
    path.write_text(f"{os.getpid()}:{time.time() - 16 * 60}")
    assert LockFile(path).is_stale()
    path.write_text(f"{os.getpid()}:{time.time()}")
    assert not LockFile(path).is_stale()
