"""Part 3: kill -9 during `kit memory index` and during `kit dream`, then check what is left.

Embeddings are ON (the workspace's default local MiniLM, offline): every index run re-embeds a
third of the notes (rewritten since the last run, so the embedding cache has not got them) while
the rest comes from the cache, and a kill lands at a random moment of that run — model load,
encoding, vector writes, FTS writes or commit. The dream loads the model too.

After every kill: the index passes SQLite's integrity check and `kit memory search` answers;
MEMORY.md is whole UTF-8 text with the user's lines exactly as before and a parseable promoted
section; the next `kit dream` / `kit memory index` succeeds at once (the OS released the locks),
and after that index run every chunk has its vector and search is hybrid again; no temp file is
left once the next write has run.

Kill moments are drawn relative to how long the same run takes unkilled, measured first (two
unkilled runs of each) and kept up to date (the median of the last five unkilled durations: the
next dream after each kill, and any run that finished before its kill), between 10 % and 80 % of
it: a kill lands mid-run whether the machine is quiet or loaded. The figures say how many did.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from races import CONFIG, _make_workspace, _seed_fact  # noqa: E402 - bench/stress is the import root

NO_MODEL = "memory:\n  embedding: {model: stress-no-such-model}\n"

WORDS = ("deploy billing invoice tuesday oat milk dentist harbour standup release window budget kitchen "
         "router password lilies birthday cabin ferry porto lisbon python sqlite index vector").split()


def _notes(root: Path, n: int, rng: random.Random, which: range | list[int] | None = None) -> None:
    """Notes of random lines (new text each time: the embedding cache has not seen it)."""
    for i in (range(n) if which is None else which):
        lines = [f"# 2025-{1 + i % 12:02d}-{1 + i % 28:02d}", ""]
        lines += [f"- {' '.join(rng.choice(WORDS) for _ in range(rng.randint(6, 18)))}" for _ in range(30)]
        (root / "memory" / f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}-n{i}.md").write_text("\n".join(lines) + "\n")


def _kit(args: list[str], env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _kill_after(args: list[str], env: dict, delay: float) -> tuple[int | None, float]:
    """Start `kit ARGS`, SIGKILL it after `delay` s: (its exit code if it finished first, seconds)."""
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "kit", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, stdin=subprocess.DEVNULL)
    try:
        return proc.wait(delay), time.monotonic() - t0
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return None, time.monotonic() - t0


class _Duration:
    """How long an unkilled run takes now: the median of the last five measured."""

    def __init__(self) -> None:
        self.seen: list[float] = []

    def add(self, seconds: float) -> None:
        self.seen.append(seconds)

    def now(self) -> float:
        last = sorted(self.seen[-5:])
        return last[len(last) // 2]

    def kill_at(self, rng: random.Random) -> float:
        return rng.uniform(0.1, 0.8) * self.now()


def _timed(args: list[str], env: dict) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    done = _kit(args, env)
    return done, time.monotonic() - t0


def _index_ok(root: Path, env: dict, *, complete: bool = False) -> tuple[bool, str]:
    """Usable after a kill: integrity_check ok and search answers. `complete` (after a full index
    run): also every chunk has its vector and search is hybrid."""
    db = root / ".kit" / "index.db"
    if db.exists():
        con = sqlite3.connect(db, timeout=30)
        try:
            check = con.execute("PRAGMA integrity_check").fetchone()[0]
            missing = con.execute("SELECT count(*) FROM chunks WHERE embedding IS NULL").fetchone()[0] \
                if complete else 0
        finally:
            con.close()
        if check != "ok":
            return False, f"integrity_check: {check}"
        if missing:
            return False, f"{missing} chunk(s) without a vector after a full index run"
    found = _kit(["memory", "search", "deploy billing", "--json", "-w", str(root)], env)
    if found.returncode != 0:
        return False, f"search exit {found.returncode}: {found.stderr.strip()[-200:]}"
    if complete:
        mode = json.loads(found.stdout).get("mode")
        if mode != "hybrid":
            return False, f"search mode {mode!r} after a full index run, expected 'hybrid'"
    return True, ""


def _user_section(text: str) -> str:
    return text.split("## My notes", 1)[-1].split("\n## ", 1)[0]


def _memory_ok(root: Path, user_before: str) -> tuple[bool, str]:
    from kit.dreaming import managed

    raw = (root / "MEMORY.md").read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False, "MEMORY.md is not UTF-8"
    if not text.endswith("\n"):
        return False, "MEMORY.md does not end with a newline (torn?)"
    if _user_section(text) != user_before:
        return False, "the user's lines changed"
    try:
        managed.parse(text)
    except Exception as exc:  # noqa: BLE001 - any failure to parse is what we count
        return False, f"promoted section does not parse: {exc}"
    return True, ""


def run(index_kills: int = 50, dream_kills: int = 50, seed: int = 12, *, embeddings: bool = True,
        notes: int = 36) -> dict:
    rng = random.Random(seed)
    env = dict(os.environ, HF_HUB_OFFLINE="1", KIT_NOW="2026-01-01T20:00:00+00:00")
    folder = Path(tempfile.mkdtemp(prefix="kit-stress-kill-"))
    out = {"embeddings": embeddings, "index_kills": 0, "index_usable": 0, "dream_kills": 0, "memory_usable": 0,
           "next_run_ok": 0, "temps_left": 0, "finished_before_kill": 0, "problems": []}
    index_time, dream_time = _Duration(), _Duration()
    try:
        root = _make_workspace(folder)
        if embeddings:
            assert NO_MODEL in CONFIG
            (root / "kit.yaml").write_text(CONFIG.replace(NO_MODEL, ""))
        _notes(root, notes, rng)
        user_before = _user_section((root / "MEMORY.md").read_text())
        first = _kit(["memory", "index", "--rebuild", "-w", str(root)], env)
        assert first.returncode == 0, first.stderr
        assert ("(hybrid)" in first.stdout) == embeddings, first.stdout
        fresh = max(1, notes // 3)

        def rewrite() -> None:  # a third of the notes new: a real encode every run, the rest cached
            _notes(root, notes, rng, rng.sample(range(notes), fresh))

        for _ in range(2):  # calibrate: the very run the kills interrupt, unkilled
            rewrite()
            full, seconds = _timed(["memory", "index", "--rebuild", "-w", str(root)], env)
            assert full.returncode == 0, full.stderr
            index_time.add(seconds)
        out["index_full_s"] = round(index_time.now(), 2)
        out["index_run"] = full.stdout.strip()
        for i in range(index_kills):
            rewrite()
            code, seconds = _kill_after(["memory", "index", "--rebuild", "-w", str(root)], env,
                                        index_time.kill_at(rng))
            out["index_kills"] += 1
            out["finished_before_kill"] += code is not None
            if code is not None:
                index_time.add(seconds)
            ok, why = _index_ok(root, env)
            out["index_usable"] += ok
            if not ok and len(out["problems"]) < 5:
                out["problems"].append(f"index kill {i}: {why}")
            if i % 10 == 9:  # and it comes back whole
                again = _kit(["memory", "index", "-w", str(root)], env)
                whole, why = _index_ok(root, env, complete=embeddings)
                out["next_run_ok"] += again.returncode == 0 and whole
                if not (again.returncode == 0 and whole) and len(out["problems"]) < 5:
                    out["problems"].append(f"index after kill {i}: exit {again.returncode} {why}")
        for c in range(2):  # calibrate: a dream with three facts to promote, unkilled
            for k in range(3):
                _seed_fact(root, 9_000 + c * 3 + k, __import__("datetime").date(2026, 1, 1))
            done, seconds = _timed(["dream", "-w", str(root)], env)
            assert done.returncode == 0, done.stderr
            dream_time.add(seconds)
        out["dream_s"] = round(dream_time.now(), 2)
        for i in range(dream_kills):
            for k in range(3):  # something to promote every time
                _seed_fact(root, 10_000 + i * 3 + k, __import__("datetime").date(2026, 1, 1))
            code, killed_s = _kill_after(["dream", "-w", str(root)], env, dream_time.kill_at(rng))
            out["dream_kills"] += 1
            out["finished_before_kill"] += code is not None
            ok, why = _memory_ok(root, user_before)
            out["memory_usable"] += ok
            if not ok and len(out["problems"]) < 5:
                out["problems"].append(f"dream kill {i}: {why}")
            again, seconds = _timed(["dream", "-w", str(root)], env)  # the lock is free at once; the write sweeps temps
            out["next_run_ok"] += again.returncode == 0
            # an unkilled dream's length: the "killed" one's if it finished first, else the next one's
            # (it promotes what the killed one did not get to: as long, or shorter, never longer)
            if code is not None:
                dream_time.add(killed_s)
            elif again.returncode == 0:
                dream_time.add(seconds)
            if again.returncode != 0 and len(out["problems"]) < 5:
                out["problems"].append(f"dream after kill {i}: exit {again.returncode}: {again.stderr.strip()[-200:]}")
            out["temps_left"] += sum(1 for p in root.rglob("*.tmp") if ".kit/" not in str(p))
        out["next_run_expected"] = index_kills // 10 + dream_kills
        out["mid_run"] = out["index_kills"] + out["dream_kills"] - out["finished_before_kill"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 5, int(sys.argv[2]) if len(sys.argv) > 2 else 5),
                     indent=1))
