"""Prompt benchmark: cold `kit prompt` (a fresh process) and warm rebuilds, for a workspace with
200 skills and bootstrap files far over budget. Prints medians; never asserts on speed.

A new process trusts a skill folder's saved scan only when its files changed more than
`kit.skills.scanner.RACY_NS` (2 s) before the scan was saved (git's "racily clean" rule: a same-size
edit within the filesystem clock's tick leaves the stat as it was). So the cold line is measured
twice: right after every skill file is touched (a tree with the rule walks, reads and hashes every
folder again, as in the first seconds after you edit skills) and once the files have settled (what
a `kit prompt` meets the rest of the time). The script runs on the base tree too
(`bench/compare.py --same-script`): both trees then measure the same two moments.

    python bench/prompt.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _isolated import isolate_home


def make_workspace(root: Path) -> None:
    from kit.init import init_workspace

    init_workspace(root)
    paragraph = "A line of notes about the project, the people and the plans. " * 4 + "\n"
    for name, size in (("AGENTS.md", 30_000), ("SOUL.md", 12_000), ("USER.md", 25_000), ("MEMORY.md", 80_000)):
        (root / name).write_text(f"# {name}\n\n" + paragraph * (size // len(paragraph)), encoding="utf-8")
    for i in range(200):
        folder = root / "skills" / f"skill-{i:03d}"
        (folder / "scripts").mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:03d}\ndescription: Skill number {i}; use it when the task mentions topic {i} "
            f"and needs the steps below.\n---\n\n# Skill {i}\n\n" + "1. Do a careful step.\n" * 40,
            encoding="utf-8",
        )
        (folder / "scripts" / "run.sh").write_text("#!/bin/sh\nls -la\necho done\n", encoding="utf-8")


RACY_S = 2.0  # kit.skills.scanner.RACY_NS (the base tree has no such rule)
SETTLE_S = RACY_S + 0.5


def cold_prompts(root: Path, runs: int) -> list[float]:
    """The time of `runs` fresh `kit prompt --json` processes (an empty list when one fails)."""
    took = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "kit", "prompt", "--json", "-w", str(root)],
                              capture_output=True, text=True)
        took.append(time.perf_counter() - start)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return []
    return took


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        isolate_home(tmp)
        root = Path(tmp) / "ws"
        make_workspace(root)

        skill_files = sorted(p for p in (root / "skills").rglob("*") if p.is_file())
        racy = []
        for _ in range(args.runs):  # each right after every skill file changed (touched: a new ctime)
            for path in skill_files:
                os.utime(path)
            racy += cold_prompts(root, 1)
        changed = time.monotonic()
        time.sleep(max(0.0, changed + SETTLE_S - time.monotonic()))
        cold_prompts(root, 1)  # the first settled run scans once more and saves what the racy ones could not
        cold = cold_prompts(root, args.runs)
        if len(racy) < args.runs or not cold:
            return 1
        # cold `kit skills list` with the skill scan cache on disk, and without it (both caches removed
        # before the run: every code file is scanned again), alternating
        cold_list, cold_unscanned = [], []
        scan_caches = [root / ".kit" / "cache" / "skill-scan.json", Path(tmp) / "home" / ".cache" / "kit" / "skill-scan.json"]
        for _ in range(args.runs):
            for samples, fresh in ((cold_list, False), (cold_unscanned, True)):
                if fresh:
                    for cache in scan_caches:
                        cache.unlink(missing_ok=True)
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "kit", "skills", "list", "--json", "-w", str(root)],
                               capture_output=True, text=True, check=True)
                samples.append(time.perf_counter() - start)
        baseline = []
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import kit.cli.main"], check=True)
            baseline.append(time.perf_counter() - start)

        from kit.prompt.builder import build_prompt
        from kit.workspace import Workspace

        ws = Workspace.open(root)
        first = build_prompt(ws)
        rebuild, cached, skill_edit = [], [], []
        soul = root / "SOUL.md"
        for i in range(args.runs * 3):
            soul.write_text(soul.read_text(encoding="utf-8") + f"edit {i}\n", encoding="utf-8")
            ws.reload(["SOUL.md"])
            start = time.perf_counter()
            build_prompt(ws)
            rebuild.append(time.perf_counter() - start)
            start = time.perf_counter()
            build_prompt(ws)
            cached.append(time.perf_counter() - start)
        skill_md = root / "skills" / "skill-007" / "SKILL.md"
        for i in range(args.runs * 3):
            skill_md.write_text(skill_md.read_text(encoding="utf-8") + f"edit {i}\n", encoding="utf-8")
            ws.reload(["skills/skill-007/SKILL.md"])
            start = time.perf_counter()
            build_prompt(ws)
            skill_edit.append(time.perf_counter() - start)

        cut = ", ".join(f"{f.name} {f.injected_chars:,}/{f.raw_chars:,}" for f in first.files if f.truncated)
        print(f"workspace: 200 skills, files cut: {cut}")
        print(f"prompt: {first.chars:,} chars ≈ {first.est_tokens:,} tokens; skills block {first.skills.format} "
              f"({first.skills.in_prompt} of {first.skills.eligible})")
        print(f"cold `kit prompt --json` (subprocess)     median {median_ms(cold):8.1f} ms")
        print(f"  … right after every skill file changed      median {median_ms(racy):8.1f} ms")
        print(f"cold `kit skills list --json` (subprocess) median {median_ms(cold_list):8.1f} ms "
              f"(scan cache on disk; without it {median_ms(cold_unscanned):.1f} ms)")
        print(f"  python + import kit.cli.main alone       median {median_ms(baseline):8.1f} ms")
        print(f"warm rebuild after a SOUL.md edit          median {median_ms(rebuild):8.2f} ms")
        print(f"warm rebuild after a SKILL.md edit         median {median_ms(skill_edit):8.2f} ms")
        print(f"warm build, same snapshot (cached)         median {median_ms(cached):8.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
