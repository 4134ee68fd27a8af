"""Dreaming quality: four weeks of three people's notes, recalls through Kit's real agent loop and
search, a dream every night; precision, recall, junk, bursts, deletions, stale values.

    python bench/dream/run.py [--persona NAME] [--details] [--no-determinism]

Prints one table (targets: precision ≥ 0.9, recall ≥ 0.8, 0 junk, 0 bursts, 0 deleted, 0 stale on
every persona; every contradiction of a user's own MEMORY.md line queued "to verify", none promoted
unasked), the same figures for a plain rule over the same recall logs (≥ 3 recalls on ≥ 2
days), the seconds per nightly dream (median), and whether a second run of one persona gives a
byte-identical MEMORY.md. Never asserts; `make bench` runs it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from personas import PERSONAS  # noqa: E402
from score import plain_baseline, score, table  # noqa: E402
from simulate import live  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--persona", action="append", help="only these personas (repeatable)")
    ap.add_argument("--details", action="store_true", help="every promotion with its label, and misses")
    ap.add_argument("--no-determinism", action="store_true", help="skip the second run of the first persona")
    ap.add_argument("--keep", help="keep the workspaces under this folder")
    args = ap.parse_args()
    people = [p for p in PERSONAS if not args.persona or p.name in args.persona]
    scores, plain, dream_times, digests = [], [], [], {}
    with tempfile.TemporaryDirectory(prefix="kit-bench-dreamq-") as tmp:
        base = Path(args.keep) if args.keep else Path(tmp)
        for p in people:
            t0 = time.perf_counter()
            world = live(p, base / p.name)
            s = score(world)
            scores.append(s)
            plain.append(plain_baseline(world))
            dream_times.extend(world.dream_seconds)
            digests[p.name] = hashlib.sha1((world.root / "MEMORY.md").read_bytes()).hexdigest()
            print(f"{p.name}{' (held out)' if p.held_out else ''}: {world.turns} agent turns, 28 dreams,"
                  f" {time.perf_counter() - t0:.0f} s", flush=True)
            if args.details:
                print("\n".join("    " + line for line in s.details))
        same = None
        if not args.no_determinism and people:
            again = live(people[0], base / f"{people[0].name}-again")
            same = hashlib.sha1((again.root / "MEMORY.md").read_bytes()).hexdigest() == digests[people[0].name]
    print()
    print(table(scores))
    print("\nthe same recall logs, plain rule (every line still in the notes returned ≥ 3 times on ≥ 2 days):")
    print(table(plain))
    print(f"\nnightly dream: median {statistics.median(dream_times) * 1000:.0f} ms over {len(dream_times)} dreams")
    if same is not None:
        print(f"deterministic (second run of {people[0].name}, MEMORY.md byte-identical): {'yes' if same else 'NO'}")
    def met(s) -> bool:
        return (s.precision >= 0.9 and s.recall >= 0.8 and not (s.junk or s.bursts or s.deleted or s.stale)
                and s.queued == s.expected and not s.unverified)

    tuned = [s for p, s in zip(people, scores, strict=True) if not p.held_out]
    held = [s for p, s in zip(people, scores, strict=True) if p.held_out]
    print("targets (precision ≥ 0.9, recall ≥ 0.8, 0 junk/bursts/deleted/stale, contradictions queued, none "
          "unverified):", "met" if all(met(s) for s in tuned) else "NOT met",
          *(["; held out (never tuned on):", "met" if all(met(s) for s in held) else "NOT met"] if held else []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
