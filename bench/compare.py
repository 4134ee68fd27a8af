"""Before/after in one run: the same bench scripts from a base tree and from this tree, interleaved.

    python bench/compare.py [--base DIR] [--rounds N] [--same-script] SCRIPT [SCRIPT ...] [-- ARGS]
    python bench/compare.py --setup REF [--base DIR]      # make the base tree and its venv once

`make bench-compare` runs it for bench/reload.py, and with `--same-script` for
bench/prompt.py and bench/dream.py, against /tmp/base-wave1 (the last commit of wave 1,
98edda5). Timings on a shared machine drift by tens of percent within
minutes, so two figures taken at different times say little; here each round runs the script
once in each tree, the order alternating (base, this, this, base, …) so a steady drift weighs on
both sides alike, and the figures are medians over the rounds.

Each tree runs with its own interpreter (`DIR/.venv/bin/python` for the base, this one for this
tree), so `import kit` and every `python -m kit` a script spawns load that tree's code. By
default each tree runs its own copy of the script (a bench follows the API of its time); with
`--same-script` both run this tree's copy. A script the base does not have runs from this tree.
This tree runs from a copy of its working files taken at the start (through PYTHONPATH), so
editing the tree during a long run changes nothing. Both trees are byte-compiled first (`compileall`, as `make install` does here): with
PYTHONDONTWRITEBYTECODE set, an uncompiled tree would recompile every module on every cold run.

The output is matched line by line: a line's numbers are its figures and the rest is its label,
so `cold `kit prompt --json` … median 273.1 ms` in both trees is one row: the median of each
figure over the rounds, before and after, and after/before. A line whose label changed keeps its
row when the text before its first number is the same. Lines whose figures are equal in every
run of both trees (sizes, settings) are counted, not shown. Never asserts on speed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_BASE = Path(os.environ.get("KIT_BENCH_BASE", "/tmp/base-wave1"))
COPIED = ("engine", "bench", "skills", "workspace", "hooks")  # what `kit` reads from a source tree
DEFAULT_REF = "98edda5"  # the last commit of wave 1: "as fast as before" means as fast as this
# 1,234.5 or 12.5 or 7, not part of a word (skill-007, SHA256, x86); a unit may follow at once
# (bench/dream.py prints `1486ms`), and stays in the label
NUMBER = re.compile(r"(?<![\w.\-])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?=(?:ms|µs|s|KiB|MiB|GiB|x)?(?!\w))")


@dataclass
class Line:
    """One output line across runs: its label (numbers as #) and each run's figures."""

    label: str
    runs: list[list[float]] = field(default_factory=list)


def parse(text: str) -> dict[str, list[float]]:
    """label -> figures for every line of a script's output that has a number."""
    out: dict[str, list[float]] = {}
    for raw in text.splitlines():
        numbers = [float(m.group(0).replace(",", "")) for m in NUMBER.finditer(raw)]
        if not numbers:
            continue
        label = " ".join(NUMBER.sub("#", raw).split())
        while label in out:  # the same label twice in one output: keep both, in order
            label += " ′"
        out[label] = numbers
    return out


@dataclass
class Tree:
    name: str  # "before" | "after"
    root: Path
    python: Path
    mine: Path  # this tree's bench folder (in the copy): where a script the base lacks comes from
    pythonpath: str | None = None  # this tree runs from a copy: edits made during the run change nothing
    lines: dict[str, dict[str, Line]] = field(default_factory=dict)  # script -> label -> Line

    def script(self, name: str, same_script: bool) -> Path:
        own = self.root / "bench" / name
        return own if own.is_file() and not same_script else self.mine / name


def run_once(tree: Tree, script: str, args: list[str], same_script: bool) -> float:
    path = tree.script(script, same_script)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HF_HUB_OFFLINE"] = "1"
    if tree.pythonpath:
        env["PYTHONPATH"] = tree.pythonpath
    start = time.perf_counter()
    proc = subprocess.run([str(tree.python), str(path), *args], cwd=tree.root, env=env,
                          capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"{tree.name}: {path} failed (exit {proc.returncode})")
    lines = tree.lines.setdefault(script, {})
    for label, numbers in parse(proc.stdout).items():
        lines.setdefault(label, Line(label)).runs.append(numbers)
    return took


def _median(runs: list[list[float]], i: int) -> float | None:
    values = [r[i] for r in runs if len(r) > i]
    return statistics.median(values) if values else None


def _fmt(value: float | None) -> str:
    if value is None:
        return "—"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"


def report(script: str, before: Tree, after: Tree) -> list[str]:
    """The table for one script: a row per figure, in the order this tree printed them."""
    b_lines = before.lines.get(script, {})
    a_lines = after.lines.get(script, {})
    rows: list[tuple[str, float | None, float | None]] = []
    constant = 0
    unmatched = [label for label in b_lines if label not in a_lines]
    used: set[str] = set()
    for label, a in a_lines.items():
        b = b_lines.get(label)
        shown = label
        if b is None and unmatched:
            # a label that changed (a verdict word, a figure added at the end): the base line
            # sharing the longest start with it, if that start holds a figure
            best = max(unmatched, key=lambda u: len(os.path.commonprefix([u, label])))
            if "#" in os.path.commonprefix([best, label]):
                b = b_lines[best]
                unmatched.remove(best)
                shown = f"{label}   [before: {best}]"
        if b is not None:
            used.add(b.label)
        figures = max(len(r) for r in a.runs)
        if b is not None and all(len({r[i] for r in a.runs + b.runs if len(r) > i}) == 1 for i in range(figures)):
            constant += 1
            continue
        for i in range(figures):
            if b is not None and len({r[i] for r in a.runs + b.runs if len(r) > i}) == 1:
                continue  # a size or setting both trees print alike
            tag = shown if figures == 1 else f"{shown}  (#{i + 1})"
            rows.append((tag, _median(b.runs, i) if b else None, _median(a.runs, i)))
    for label, b in b_lines.items():
        if label not in used:
            for i in range(max(len(r) for r in b.runs)):
                rows.append((f"{label}  (#{i + 1}, before only)", _median(b.runs, i), None))
    out = [f"{'before':>10} {'after':>10} {'ratio':>6}  line (# = a figure)"]
    for tag, b_value, a_value in rows:
        ratio = f"{a_value / b_value:6.2f}" if a_value is not None and b_value else "     —"
        out.append(f"{_fmt(b_value):>10} {_fmt(a_value):>10} {ratio}  {tag}")
    if constant:
        out.append(f"({constant} line(s) with the same figures in both trees not shown)")
    return out


def setup_base(ref: str, base: Path) -> int:
    """Make `base` a detached worktree at `ref` with its own venv (what its Makefile installed),
    under a lock (flock(2), the same lock `flock BASE.lock` takes), so helpers share one base."""
    from filelock import FileLock

    with FileLock(str(base) + ".lock"):
        if not base.exists():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), ref], check=True)
        py = base / ".venv" / "bin" / "python"
        stamp = base / ".venv" / ".installed"
        if not stamp.exists():
            if not py.exists():
                subprocess.run(["python3.11", "-m", "venv", str(base / ".venv")], check=True)
            pip = [str(py), "-m", "pip", "install", "--quiet"]
            subprocess.run([*pip, "--upgrade", "pip"], check=True)
            subprocess.run([*pip, "torch==2.13.0"], check=True)  # the CPU build on disk, before .[all]
            subprocess.run([*pip, "-e", f"{base}[all,dev]"], check=True)
            stamp.touch()
    print(f"base tree {base} at {ref}: ready ({py})")
    return 0


def main() -> int:
    argv = sys.argv[1:]
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scripts", nargs="*", help="bench scripts, relative to bench/ (prompt.py …)")
    parser.add_argument("--base", type=Path, default=DEFAULT_BASE, help="the before tree (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each script in each tree")
    parser.add_argument("--same-script", action="store_true", help="run this tree's copy of each script in both")
    parser.add_argument("--setup", metavar="REF", nargs="?", const=DEFAULT_REF,
                        help=f"create the base tree at REF (default {DEFAULT_REF}) and its venv, then exit")
    args = parser.parse_args(argv)
    if args.setup:
        return setup_base(args.setup, args.base)
    if not args.scripts:
        parser.error("name at least one bench script (prompt.py, reload.py …)")
    base_py = args.base / ".venv" / "bin" / "python"
    if not base_py.exists():
        print(f"no base tree at {args.base}: make one with `python bench/compare.py --setup {DEFAULT_REF}`")
        return 1
    copy = Path(tempfile.mkdtemp(prefix="kit-bench-compare-"))
    for part in COPIED:  # the working copy as it is now, uncommitted edits included
        if (ROOT / part).exists():
            shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    try:
        return _compare(args, extra, base_py, copy)
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def _compare(args: argparse.Namespace, extra: list[str], base_py: Path, copy: Path) -> int:
    before = Tree("before", args.base, base_py, copy / "bench")
    after = Tree("after", copy, Path(sys.executable), copy / "bench", pythonpath=str(copy / "engine"))
    for tree in (before, after):
        subprocess.run([str(tree.python), "-m", "compileall", "-q", str(tree.root / "engine")], check=True,
                       stdout=subprocess.DEVNULL)
    head = subprocess.run(["git", "-C", str(args.base), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    this = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    print(f"before: {args.base} at {head}; after: {ROOT} (copied) at {this}{' + edits' if dirty else ''}; "
          f"{args.rounds} rounds, interleaved; load {os.getloadavg()[0]:.1f}", flush=True)
    for script in args.scripts:
        for r in range(args.rounds):
            order = (before, after) if r % 2 == 0 else (after, before)
            took = [f"{tree.name} {run_once(tree, script, extra, args.same_script):.0f} s" for tree in order]
            print(f"  {script} round {r + 1}/{args.rounds}: {', '.join(took)}", file=sys.stderr, flush=True)
        print(f"\n=== {script}: medians of {args.rounds} runs each, after/before ===")
        print("\n".join(report(script, before, after)), flush=True)
    print(f"\nload at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
