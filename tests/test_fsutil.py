"""Atomic writes, confined joins, lock files."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kit.errors import BusyError, DocumentError, PathEscapeError
from kit.fsutil import (
    LockFile,
    atomic_write,
    file_stamp,
    looks_binary,
    pid_alive,
    read_file,
    read_text,
    safe_join,
)


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


@pytest.mark.parametrize("size", [0, 1, 65_535, 65_536, 65_537, (1 << 20) + 3])
@pytest.mark.parametrize("stat_says", ["its size", "less (it grew after the stat)"])
def test_read_file_reads_every_byte_and_stats_the_version_it_read(tmp_path: Path, monkeypatch, size: int,
                                                                  stat_says: str):
    f = tmp_path / "blob"
    data = (bytes(range(256)) * (size // 256 + 1))[:size]
    f.write_bytes(data)
    if stat_says != "its size":  # the reads are sized by the stat: they must still go on to the end
        real = os.fstat
        monkeypatch.setattr(os, "fstat", lambda fd: os.stat_result((*real(fd)[:6], 10, *real(fd)[7:])))
    raw, st = read_file(f, max_bytes=2 << 20)
    assert raw == data and st.st_ino == f.stat().st_ino
    assert read_file(f, max_bytes=max(size - 1, 0), cut=True)[0] == data[:max(size - 1, 0)]
    if size:
        with pytest.raises(DocumentError, match="over the"):
            read_file(f, max_bytes=size - 1)


def test_a_files_stamp_is_the_one_before_the_read(tmp_path: Path, monkeypatch):
    f = tmp_path / "x.md"
    f.write_text("one\n")
    _raw, st = read_file(f)
    assert file_stamp(st) == file_stamp(os.stat(f))
    # a write during the read: the stamp is of the version before it, so it matches the file no more
    real_read = os.read
    appended: list[bool] = []

    def read_then_append(fd: int, n: int) -> bytes:
        chunk = real_read(fd, n)
        if chunk and not appended:
            appended.append(True)
            with open(f, "a") as handle:
                handle.write("two\n")
        return chunk

    monkeypatch.setattr(os, "read", read_then_append)
    raw, st = read_file(f)
    monkeypatch.undo()
    assert raw.startswith(b"one\n") and file_stamp(st) != file_stamp(os.stat(f))


@pytest.mark.parametrize("raw, binary", [
    (b"", False),
    (b"text\x00", True),  # a NUL anywhere in the first 8 KiB
    (b"\t\n\r\x0c" * 100, False),  # tabs, newlines, carriage returns and form feeds are text
    (b"\x01\x1b" * 100, True),  # other control characters, far over 30 %
    (b"\x01\x02\x03" + b"abcdefg", False),  # exactly 30 %: not over it
    (b"\x01\x02\x03\x04" + b"abcdef", True),  # 40 %
    (b"\x1f" * 31 + b"a" * 69, True),  # 31 %, the highest control character
    (b" " * 100 + b"\x7f\xff" * 100, False),  # DEL and high bytes are not control characters
    (b"a" * 8192 + b"\x01" * 10_000, False),  # only the first 8 KiB is looked at
])
def test_looks_binary_counts_control_characters_but_tab_newline_cr_and_form_feed(raw: bytes, binary: bool):
    assert looks_binary(raw) is binary


def test_lock_is_exclusive_and_released(tmp_path: Path):
    path = tmp_path / "locks" / "dream.lock"
    first = LockFile(path)
    assert first.try_acquire()
    pid, _ = first.holder()
    assert pid == os.getpid()
    with pytest.raises(BusyError, match=f"held by pid {os.getpid()}"):
        LockFile(path).acquire(wait=0.2, what="dream lock")
    first.release()
    assert not first.owner_path.exists() and first.holder() is None
    with LockFile(path) as again:
        assert again.held and LockFile(path).is_locked()
    assert not LockFile(path).is_locked()


_HOLD = """
import sys, time
from kit.fsutil import LockFile
lock = LockFile(sys.argv[1])
assert lock.try_acquire()
print("held", flush=True)
time.sleep(120)
"""


def _holder(path: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_lock_is_released_by_the_os_when_its_holder_is_killed(tmp_path: Path):
    path = tmp_path / "locks" / "dream.lock"
    proc = _holder(path)
    try:
        assert not LockFile(path).try_acquire()
        assert LockFile(path).holder()[0] == proc.pid
    finally:
        proc.kill()
        proc.wait()
    lock = LockFile(path)
    assert lock.try_acquire()  # at once: no stale pid file to wait out or take over
    assert lock.holder()[0] == os.getpid()
    lock.release()


def test_a_long_running_holder_keeps_its_lock(tmp_path: Path):
    """Regression: a pid-file lock older than 15 minutes was taken over while its dream still ran
    (a full index alone can take 8 minutes on a loaded machine), so two dreams wrote at once."""
    path = tmp_path / "locks" / "dream.lock"
    proc = _holder(path)
    try:
        # what the lock file of a dream started 16 minutes ago held in the pid-file scheme
        path.write_text(f"{proc.pid}:{time.time() - 16 * 60}")
        assert not LockFile(path).try_acquire()
        with pytest.raises(BusyError):
            LockFile(path).acquire(wait=0.3, what="dream lock")
    finally:
        proc.kill()
        proc.wait()


def test_pid_alive_knows_a_live_a_dead_and_a_meaningless_pid():
    """One definition (the locks, the temp-file sweep and the fleet's running markers use it)."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert pid_alive(os.getpid()) is True
    assert pid_alive(gone.pid) is False
    # 0 and negatives are not a process: os.kill(0, 0) would ask about our own process group
    assert pid_alive(0) is False and pid_alive(-1) is False


def _link_tree(tmp_path: Path) -> Path:
    """ws/ with a.md and sub/b.md; links out of it (out → ws2/), within it (inner → sub/), into it
    from outside (outside/in → ws/sub/) and a loop (loop1 ↔ loop2). Returns ws."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.md").write_text("a", encoding="utf-8")
    (ws / "sub" / "b.md").write_text("b", encoding="utf-8")
    (tmp_path / "ws2").mkdir()
    (tmp_path / "ws2" / "c.md").write_text("c", encoding="utf-8")
    (ws / "out").symlink_to(tmp_path / "ws2")
    (ws / "inner").symlink_to(ws / "sub")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "in").symlink_to(ws / "sub")
    (ws / "loop1").symlink_to(ws / "loop2")
    (ws / "loop2").symlink_to(ws / "loop1")
    return ws


def _within_by_pathlib(root, path) -> bool:
    """The reference: what is_within answered with Path.resolve() and .parents."""
    try:
        base, resolved = Path(root).resolve(), Path(path).resolve()
    except (RuntimeError, OSError):
        return False
    return resolved == base or base in resolved.parents


@pytest.mark.parametrize("rel, within", [
    ("ws", True), ("ws/a.md", True), ("ws/sub/b.md", True), ("ws/../ws/sub", True),
    ("ws/missing/x.md", True),  # not there yet: still inside
    ("ws/a.md/x", True),  # under a file: no such path, but inside by its name
    ("ws2/c.md", False),  # a sibling whose name starts with the root's
    ("ws/out/c.md", False),  # a symlink out of the root
    ("outside/in/b.md", True),  # a symlink from outside into it
    ("ws/loop1", False), ("ws/loop1/x", False),  # a loop is never within
    ("ws/..", False), ("elsewhere.md", False),
])
def test_is_within_resolves_symlinks_and_refuses_loops(tmp_path: Path, monkeypatch, rel: str, within: bool):
    from kit.fsutil import is_within

    ws = _link_tree(tmp_path)
    assert is_within(ws, tmp_path / rel) is within is _within_by_pathlib(ws, tmp_path / rel)
    monkeypatch.chdir(tmp_path)  # relative paths resolve against the working folder, as before
    assert is_within("ws", rel) is within
    assert is_within(ws / "loop1", ws / "loop1") is False  # a root that is a loop holds nothing


@pytest.mark.parametrize("rel, plain", [
    ("a.md", True), ("sub/b.md", True), ("sub", True),
    ("out/c.md", False), ("out", False),  # a link out of the root, and the link itself
    ("inner/b.md", False),  # a link that stays inside: is_within's to judge
    ("loop1", False), ("loop1/x", False),
    ("missing.md", False), ("sub/missing/x.md", False),  # cannot tell: is_within's to judge
    ("sub/../a.md", False), ("./a.md", False), ("sub//b.md", False), ("", False),
])
def test_no_link_below_is_true_only_where_is_within_is(tmp_path: Path, rel: str, plain: bool):
    """no_link_below is is_within's shortcut for a workspace's documents: True only for an existing
    path reached through no symlink, under a root that is itself a link (as /tmp is on some
    systems); every other path is left to is_within."""
    from kit.fsutil import is_within, no_link_below

    ws = tmp_path / "ws-link"
    ws.symlink_to(_link_tree(tmp_path))
    assert no_link_below(ws, rel) is plain
    if plain:
        assert is_within(ws, ws / rel)
    assert no_link_below(ws, str(ws / "a.md")) is False  # an absolute path is not below anything
