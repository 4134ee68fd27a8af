"""`make stress`: Kit under malformed input, concurrent edits, kill -9, escapes and injections (issue 12).

Five parts, one figure line each (and `--json` for all the detail):

    malformed   ≥ 1,000 generated malformed inputs over every file kind, through the real CLI
    races       ≥ 500 cycles of a real `kit dream` promoting while another process edits MEMORY.md
    kills       ≥ 100 kill -9 during `kit memory index` and `kit dream`, then a check of what is left
    escapes     ≥ 50 path-escape attempts through the agent's file, memory and skill tools
    injections  ≥ 50 injection strings and benign controls through every write door

Exit status 1 when any part misses its bar (0 crashes, 0 hangs, 0 lost/torn/reverted lines, every
kill survivable, every escape refused, every injection refused and every control accepted).
Not part of `make test` (it takes minutes); needs nothing beyond Kit's own install.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

PARTS = ("malformed", "races", "kills", "escapes", "injections")


def _malformed(quick: bool) -> tuple[str, bool, dict]:
    import malformed

    r = malformed.run(limit=150 if quick else None)
    ok = r["crashes"] == 0 and r["hangs"] == 0 and (quick or r["inputs"] >= 1000)
    line = (f"malformed: {r['inputs']:,} inputs across {r['kinds']} file kinds: {r['crashes']} crashes, "
            f"{r['hangs']} hangs (over {malformed.HANG_S:g} s); median {r['median_s']:.2f} s, max {r['max_s']:.1f} s, "
            f"{r['slow']} over {malformed.SLOW_S:g} s; {r['subprocess_runs']} also as real kit processes")
    return line, ok, r


def _races(quick: bool) -> tuple[str, bool, dict]:
    import races

    r = races.run(cycles=20 if quick else 500)
    bad = r["lost"] + r["reverted"] + r["torn"]
    # a run where the dream promotes nothing races nobody: that is a broken harness, not a pass
    ok = bad == 0 and r["edit_anomalies"] == 0 and r["promoted"] > 0 and (quick or r["cycles"] >= 500)
    line = (f"races: {r['cycles']} dream-vs-edit cycles: {r['lost']} lost, {r['torn']} torn, {r['reverted']} reverted "
            f"user lines (a lost or reverted line counted once, when it appears; {r['edit_anomalies']} seen missing by the editor mid-run); {r['promoted']} facts promoted, "
            f"{r['dream_failed']} dreams gave up, {r['temps_left']} temp files left; median dream {r['median_dream_s']} s")
    return line, ok, r


def _kills(quick: bool) -> tuple[str, bool, dict]:
    import kills

    n = 5 if quick else 50
    r = kills.run(index_kills=n, dream_kills=n)
    ok = (r["index_usable"] == r["index_kills"] and r["memory_usable"] == r["dream_kills"]
          and r["next_run_ok"] == r["next_run_expected"] and r["temps_left"] == 0
          # a kill that comes after the run finished tests nothing: nine in ten must land mid-run
          and r["mid_run"] >= 0.9 * (r["index_kills"] + r["dream_kills"])
          and (quick or r["index_kills"] + r["dream_kills"] >= 100))
    line = (f"kills: {r['index_kills'] + r['dream_kills']} kill -9, embeddings {'on' if r['embeddings'] else 'off'} "
            f"({r['index_kills']} during kit memory index, "
            f"{r['dream_kills']} during kit dream): index usable {r['index_usable']}/{r['index_kills']}, "
            f"MEMORY.md usable {r['memory_usable']}/{r['dream_kills']}, next run ok "
            f"{r['next_run_ok']}/{r['next_run_expected']}, temp files left {r['temps_left']}; "
            f"{r['mid_run']} of {r['index_kills'] + r['dream_kills']} landed mid-run (kill moments drawn at 10-80 % of "
            f"an unkilled run: index {r['index_full_s']} s, dream {r['dream_s']} s at the start)")
    return line, ok, r


def _escapes(quick: bool) -> tuple[str, bool, dict]:
    import escapes

    r = escapes.run()
    ok = r["refused"] == r["attempts"] and r["attempts"] >= 50
    pct = 100 * r["refused"] / r["attempts"] if r["attempts"] else 0.0
    line = (f"escapes: {r['attempts']} attempts through read_file/write_file/edit_file/memory_get/skill_view: "
            f"{r['refused']} refused ({pct:.0f} %)")
    return line, ok, r


def _injections(quick: bool) -> tuple[str, bool, dict]:
    import doors

    r = doors.run()
    ok = r["refused"] == r["refused_of"] and r["accepted_benign"] == r["accepted_benign_of"]
    per = ", ".join(f"{name} {d['refused']}/{r['injections']}" for name, d in r["per_door"].items())
    line = (f"injections: {r['injections']} strings x {r['doors']} doors: {r['refused']}/{r['refused_of']} refused; "
            f"{r['benign']} benign controls: {r['accepted_benign']}/{r['accepted_benign_of']} accepted "
            f"(refused per door: {per})")
    return line, ok, r


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("parts", nargs="*", help=f"parts to run: {', '.join(PARTS)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="a small run of each part (minutes, not the bars)")
    parser.add_argument("--json", type=Path, help="write every detail to this file")
    args = parser.parse_args()
    wanted = args.parts or list(PARTS)
    unknown = [p for p in wanted if p not in PARTS]
    if unknown:
        parser.error(f"unknown part {unknown[0]!r}; use {', '.join(PARTS)}")
    t0 = time.monotonic()
    failed: list[str] = []
    details: dict[str, dict] = {}
    for part in wanted:
        start = time.monotonic()
        line, ok, detail = globals()[f"_{part}"](args.quick)
        detail["seconds"] = round(time.monotonic() - start, 1)
        details[part] = detail
        print(f"{'ok  ' if ok else 'FAIL'} {line} [{detail['seconds']:.0f} s]", flush=True)
        if not ok:
            failed.append(part)
            for key in ("bad", "examples", "problems", "escaped", "let_in", "blocked_benign", "failures"):
                if detail.get(key):
                    shown = detail[key][:8] if isinstance(detail[key], list) else detail[key]
                    print(f"     {key}: {json.dumps(shown, ensure_ascii=False)[:1500]}", flush=True)
    print(f"stress: {len(wanted) - len(failed)}/{len(wanted)} parts met their bar in {time.monotonic() - t0:.0f} s",
          flush=True)
    if args.json:
        args.json.write_text(json.dumps(details, indent=1, ensure_ascii=False, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
