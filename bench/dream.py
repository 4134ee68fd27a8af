"""Dreaming benchmark: 90 days of daily notes and 20,000 recall events; time per phase.

Prints medians (never asserts on speed). Spec §11: "Dreaming over 90 days of notes and 20,000
recall events: seconds, not minutes."

A workspace object keeps what a dream learnt about an unchanged log (the candidates, the junk
verdicts: `kit.dreaming.runner.load_candidates`), as `kit serve` does between dreams; the "cold"
lines open a new workspace object each time (as a new `kit dream` process does), so nothing but
state.db carries over. "next night" is the nightly `kit dream` of a cron job: the previous
night's dream applied, one more day of recall events in the log — in this process with a new
workspace object, then as cron runs it, `python -m kit dream` in a new process.

The notes are indexed (`kit memory index`) before anything is timed, in both trees: every recall
event is a hit of a search over that index, so a workspace with a recall log has its notes indexed.

The script runs on the "before" tree too (98edda5, through `bench/compare.py --same-script`), so
both trees do the same work on every line: there, a workspace object caches nothing and the
candidates are what its `run_dream` read (`build_candidates(events(db))`).

    python bench/dream.py [--runs N] [--events N] [--days N]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, datetime, timedelta
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SUBJECTS = ["Alice", "Bob", "Priya", "the staging cluster", "the Lisbon client", "Grandma", "the release train",
            "the billing service", "Ben", "the design review", "the sourdough starter", "the Q3 budget"]
VERBS = ["prefers", "moved", "needs", "asked about", "decided on", "is blocked by", "scheduled", "rejected",
         "approved", "wants to revisit"]
OBJECTS = ["oat milk in a flat white", "Thursday deploys after standup", "a new on-call rota", "Postgres 16 on port 5433",
           "the invoice template in Finance", "lilies rather than roses", "a rollback plan pinned for 48 hours",
           "peanut-free cake", "the 14:00 one-to-one slot", "a shared drive for contracts", "two reviewers per change",
           "quiet hours after 19:00"]


def make_notes(root: Path, n_days: int, rng: random.Random) -> list[tuple[str, int, str]]:
    """90 daily notes of ~10 bullets; returns (path, line, text) for every bullet."""
    start = date(2026, 1, 1)
    bullets = []
    for i in range(n_days):
        day = start + timedelta(days=i)
        lines = [f"# {day.isoformat()}", ""]
        for _ in range(rng.randint(8, 12)):
            text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (note {rng.randint(1, 999)})."
            lines.append(f"- {text}")
            bullets.append((f"memory/{day.isoformat()}.md", len(lines), f"- {text}"))
        (root / "memory" / f"{day.isoformat()}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return bullets


def insert_events(ws, bullets, n_events: int, n_days: int, rng: random.Random) -> None:
    from kit.memory.recall import claim_hash, ensure_schema, query_hash

    # recall follows a power law: a few lines are recalled very often, most rarely
    weights = [1 / (k + 1) ** 0.9 for k in range(len(bullets))]
    order = list(range(len(bullets)))
    rng.shuffle(order)
    start = date(2026, 1, 1)
    rows = []
    for _ in range(n_events):
        path, line, text = bullets[order[rng.choices(range(len(bullets)), weights)[0]]]
        note_day = date.fromisoformat(path[7:17])
        day = min(start + timedelta(days=n_days - 1), note_day + timedelta(days=rng.randint(0, 20)))
        q = f"question {rng.randint(1, 40)} about {text.split()[1]}"
        ts = datetime.fromisoformat(f"{day.isoformat()}T{rng.randint(8, 20):02d}:00:00+00:00").timestamp()
        rows.append((f"{path}:{line}:{line}", path, line, line, text, claim_hash(text), q, query_hash(q),
                     round(rng.uniform(0.4, 0.95), 3), day.isoformat(), ts, "tool"))
    db = ws.open_state()
    ensure_schema(db)
    with db.transaction():
        db.conn.executemany(
            "INSERT INTO recall_events(key, path, start_line, end_line, snippet, claim_hash, query, query_hash,"
            " score, day, ts, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    db.close()


def insert_day(ws, bullets, n_events: int, day: date, rng: random.Random) -> None:
    """One more day of recall events (the next night's new log), on lines of the existing notes."""
    from kit.memory.recall import claim_hash, query_hash

    db = ws.open_state()
    rows = []
    for _ in range(n_events):
        path, line, text = bullets[int(len(bullets) * rng.random() ** 2)]
        q = f"question {rng.randint(1, 40)} about {text.split()[1]}"
        ts = datetime.fromisoformat(f"{day.isoformat()}T{rng.randint(8, 20):02d}:00:00+00:00").timestamp()
        rows.append((f"{path}:{line}:{line}", path, line, line, text, claim_hash(text), q, query_hash(q),
                     round(rng.uniform(0.4, 0.95), 3), day.isoformat(), ts, "tool"))
    with db.transaction():
        db.conn.executemany(
            "INSERT INTO recall_events(key, path, start_line, end_line, snippet, claim_hash, query, query_hash,"
            " score, day, ts, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    db.close()


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--days", type=int, default=90)
    args = ap.parse_args()
    rng = random.Random(7)

    from kit.dreaming.runner import run_dream
    from kit.init import init_workspace
    from kit.memory.service import memory_for
    from kit.workspace import Workspace

    try:
        from kit.dreaming.runner import load_candidates
    except ImportError:  # before (98edda5): no cache, the candidates its run_dream read
        from kit.dreaming.candidates import build_candidates
        from kit.memory.recall import events

        def load_candidates(ws, db):
            return build_candidates(events(db))

    with tempfile.TemporaryDirectory(prefix="kit-bench-dream-") as tmp:
        root = Path(tmp) / "ws"
        init_workspace(root)
        bullets = make_notes(root, args.days, rng)
        os.environ["KIT_NOW"] = f"{(date(2026, 1, 1) + timedelta(days=args.days - 1)).isoformat()}T23:00:00+00:00"
        try:
            from kit.memory.embeddings import Embedders
        except ImportError:  # before: the models were a module global, shared by every workspace object
            def new_ws():
                return Workspace.open(root)
        else:
            shared = Embedders()  # one model per process, as `kit serve` has

            def new_ws():
                return Workspace.open(root, embedders=shared)

        ws = new_ws()
        insert_events(ws, bullets, args.events, args.days, rng)
        print(f"{args.days} notes, {len(bullets)} bullets, {args.events} recall events")

        t_model = timed(lambda: memory_for(ws).embedder.encode(["warm up"]))
        print(f"embedding model load (once per process): {t_model:.2f} s")
        indexed = memory_for(ws).sync()  # what searching the notes (the log's source) did
        memory_for(ws).close()
        print(f"notes indexed (not timed): {indexed.chunks} chunks")

        db = ws.open_state()
        cold = [timed(lambda: load_candidates(new_ws(), db)) for _ in range(args.runs)]
        t_read, cands = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            cands = load_candidates(ws, db)
            t_read.append(time.perf_counter() - t0)
        db.close()
        print(f"candidates: {len(cands)} from {args.events} events")
        rows = [("read log + build candidates", t_read), ("  … cold, nothing dreamt yet (a new workspace object)", cold)]
        for phase in ("light", "rem", "deep"):
            rows.append((f"{phase} (dry run)", [timed(lambda p=phase: run_dream(ws, phases=(p,), dry_run=True))
                                                for _ in range(args.runs)]))
        rows.append(("all phases (dry run)", [timed(lambda: run_dream(ws, dry_run=True)) for _ in range(args.runs)]))
        rows.append(("  … cold (a new workspace object)",
                     [timed(lambda: run_dream(new_ws(), dry_run=True)) for _ in range(args.runs)]))
        first = timed(lambda: run_dream(ws))
        again = [timed(lambda: run_dream(ws)) for _ in range(args.runs)]
        rows.append(("all phases, applied (first run of the day)", [first]))
        rows.append(("all phases, applied (idle re-run)", again))
        rows.append(("  … cold (a new workspace object: state.db only)",
                     [timed(lambda: run_dream(new_ws())) for _ in range(args.runs)]))
        # the next nights, each from a new process: one more day of events, then read / dream
        per_day = max(1, args.events // args.days)
        read_next, dream_next = [], []
        for k in range(args.runs):
            night = date(2026, 1, 1) + timedelta(days=args.days + k)
            insert_day(ws, bullets, per_day, night, rng)
            os.environ["KIT_NOW"] = f"{night.isoformat()}T23:00:00+00:00"
            db = ws.open_state()
            read_next.append(timed(lambda d=db: load_candidates(new_ws(), d)))
            db.close()
            dream_next.append(timed(lambda: run_dream(new_ws())))
        rows.append((f"next night: read log + build candidates, cold (+{per_day} events)", read_next))
        rows.append(("next night: all phases, applied, cold", dream_next))
        # the nights as cron runs them: `kit dream` in a new process, so nothing a process keeps
        # between workspace objects (module state in the base tree) carries over; imports and the
        # model's load are part of it
        new_process = []
        for k in range(args.runs):
            night = date(2026, 1, 1) + timedelta(days=args.days + args.runs + k)
            insert_day(ws, bullets, per_day, night, rng)
            env = {**os.environ, "KIT_NOW": f"{night.isoformat()}T23:00:00+00:00"}
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "kit", "dream", "-w", str(root)], env=env, check=True,
                           capture_output=True)
            new_process.append(time.perf_counter() - t0)
        rows.append(("next night: `kit dream` in a new process", new_process))
        print(f"\n{'step':<44} {'median':>9} {'min':>9}")
        for name, samples in rows:
            print(f"{name:<44} {statistics.median(samples) * 1000:>7.0f}ms {min(samples) * 1000:>7.0f}ms")
        promoted = (root / "MEMORY.md").read_text().count("<!-- kit:promoted")
        print(f"\npromoted entries in MEMORY.md: {promoted}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
