"""Part 2: a real `kit dream` process promoting while another process edits MEMORY.md.

Each cycle seeds one new fact that the dream will promote (a note line and its recall events), then
runs `kit dream` as a real process while an editor process keeps changing the user's own lines of
MEMORY.md: rewriting lines in place, appending lines, deleting lines, saving the way editors and
scripts do (in-place rewrite, write to a temp file and rename), in bursts of saves milliseconds
apart with short pauses between. After the dream exits the
editor is paused and MEMORY.md is checked against what the editor last saved:

    lost      a user line the editor saved that is not in the file
    reverted  a user line back at an older version (or a deleted one come back)
    torn      a partial line, a duplicate, a file that is not whole UTF-8 text

`--against PATH` runs the same cycles against another checkout's engine (e.g. main before the fix).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from datetime import date, datetime, timedelta
from pathlib import Path

USER_LINE = re.compile(r"^- u(\d+): v(\d+)( .*)?$")
CONFIG = textwrap.dedent("""\
    dreaming:
      deep: {limit: 1000, min_score: 0.0, min_recall_count: 1, min_unique_queries: 1, min_recall_days: 1,
             max_age_days: 100000}
      memory_max_chars: 10000000
    memory:
      embedding: {model: stress-no-such-model}
    """)
START = date(2026, 1, 1)
FACT_WORDS = ("harbour lantern violin saffron glacier orchard compass meadow ember quartz falcon walnut "
              "cobalt thistle canyon juniper marble pepper willow beacon velvet cedar").split()

EDITOR = r'''
import json, os, random, re, sys, time, select
path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
LINE = re.compile(r"^- u(\d+): v(\d+)( .*)?$", re.M)
state = {k: 0 for k in range(12)}      # the user's lines as the editor last saved them
next_id = len(state)
anomalies = []                          # a line the editor expected and did not find when it read

def save(text):
    style = rng.random()
    if style < 0.45:                   # in place, as most scripts and many editors do
        with open(path, "r+", encoding="utf-8") as f:
            f.seek(0); f.write(text); f.truncate()
    elif style < 0.75:                 # write a temp file, rename over (VS Code, JetBrains, vim)
        tmp = f"{path}.editor~"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    else:                              # open with truncation and write
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

def edit():
    global next_id
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    where = {}
    for i, ln in enumerate(lines):
        m = LINE.match(ln)
        if m:
            where[int(m.group(1))] = i
    for k in state:
        if k not in where:
            anomalies.append(f"u{k} missing when read")
    op = rng.random()
    if op < 0.6 and state:              # rewrite an existing line in place
        k = rng.choice(list(state))
        state[k] += 1
        new = f"- u{k}: v{state[k]} " + "x" * rng.randint(0, 40)
        if k in where:
            lines[where[k]] = new
        else:
            lines.insert(_anchor(lines), new)
    elif op < 0.8 or len(state) < 6:    # add a line under "## My notes"
        k = next_id; next_id += 1
        state[k] = 0
        lines.insert(_anchor(lines), f"- u{k}: v0")
    else:                               # delete a line
        k = rng.choice(list(state))
        del state[k]
        if k in where:
            del lines[where[k]]
    save("\n".join(lines))

def _anchor(lines):
    if "## My notes" not in lines:     # the whole section is gone: put it back, and say so
        anomalies.append("section missing when read")
        lines[1:1] = ["", "## My notes", ""]
    i = lines.index("## My notes") + 1
    while i < len(lines) and lines[i].strip() and not lines[i].startswith("## "):
        i += 1
    return i

print("ready", flush=True)
paused = False
while True:
    r, _, _ = select.select([sys.stdin], [], [], 0 if not paused else None)
    if r:
        cmd = sys.stdin.readline().strip()
        if cmd == "pause":
            paused = True
            print(json.dumps({"state": state, "anomalies": anomalies}), flush=True)
            anomalies = []
            continue
        if cmd == "resume":
            paused = False
            continue
        if cmd in ("stop", ""):
            break
    if not paused:
        # bursts of saves a few milliseconds apart (a script, an autosave), then a short pause
        for _ in range(rng.randint(3, 25)):
            edit()
            time.sleep(rng.uniform(0.0005, 0.004))
        time.sleep(rng.uniform(0.01, 0.12))
'''


def _seed_fact(root: Path, n: int, day: date) -> None:
    """memory/DAY-cNNNN.md holds fact n; two recall events make it a candidate that day."""
    rel = f"memory/{day.isoformat()}-c{n:04d}.md"  # a note of the day it is recalled (dreaming reads its date)
    # a distinct claim each time, with no value to change: dreaming sends "the same thing with a new
    # value" to its to-verify queue instead of promoting it
    a, b, c = (FACT_WORDS[(n * k + k) % len(FACT_WORDS)] for k in (7, 11, 13))
    snippet = f"- Stress fact {n}: {a.capitalize()} keeps the {b} beside the {c} (item {n})."
    (root / rel).write_text(f"# Cycle {n}\n\n{snippet}\n")
    from kit.memory import recall as recall_log

    db = sqlite3.connect(root / ".kit" / "state.db", timeout=30)
    try:
        for q in range(2):
            ts = datetime.fromisoformat(f"{day.isoformat()}T1{q}:00:00+00:00").timestamp()
            db.execute(
                "INSERT INTO recall_events(key, path, start_line, end_line, snippet, claim_hash, query, query_hash,"
                " score, day, ts, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (recall_log.candidate_key(rel, 3, 3), rel, 3, 3, snippet, recall_log.claim_hash(snippet),
                 f"deploy window {n} q{q}", recall_log.query_hash(f"deploy window {n} q{q}"), 0.9,
                 day.isoformat(), ts, "tool"))
        db.commit()
    finally:
        db.close()


_ENGINE: list[Path] = []


def _engine() -> Path:
    return _ENGINE[0] if _ENGINE else Path(__file__).resolve().parents[2] / "engine"


def _make_workspace(folder: Path) -> Path:
    from kit.init import init_workspace
    from kit.memory import recall as recall_log
    from kit.state import StateDB

    root = folder / "ws"
    init_workspace(root)
    (root / "kit.yaml").write_text(CONFIG)
    lines = ["# Memory", "", "My own notes; the dream adds its promotions below.", "", "## My notes", ""]
    lines += [f"- u{k}: v0" for k in range(12)]
    (root / "MEMORY.md").write_text("\n".join(lines) + "\n")
    (root / ".kit").mkdir(exist_ok=True)
    db = StateDB(root / ".kit" / "state.db")
    recall_log.ensure_schema(db)
    db.close()
    return root


def _check(root: Path, saved: dict[str, int], seen: set | None = None) -> dict:
    """Count what is wrong now. With `seen` (per lane), a defect still there from an earlier
    cycle (a resurrected line the editor never touches again stays for good) is counted once:
    the totals are events, and `what` names each new one."""
    raw = (root / "MEMORY.md").read_bytes()
    out: dict = {"lost": 0, "reverted": 0, "torn": 0, "what": []}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        out["torn"] += 1
        return out
    if not text.endswith("\n") or "## My notes" not in text:
        out["torn"] += 1
    found: dict[int, int] = {}
    section = text.split("## My notes", 1)[-1].split("\n## ", 1)[0]
    for line in section.split("\n")[1:]:
        if not line.strip():
            continue
        m = USER_LINE.match(line)
        if not m:
            out["torn"] += 1  # a partial or mixed line
            continue
        k, v = int(m.group(1)), int(m.group(2))
        if k in found:
            out["torn"] += 1  # a duplicate: two versions of one line
        found[k] = v
    want = {int(k): v for k, v in saved.items()}

    def count(kind: str, what: str) -> None:
        if seen is not None:
            if what in seen:
                return
            seen.add(what)
        out[kind] += 1
        out["what"].append(what)

    for k, v in want.items():
        if k not in found:
            count("lost", f"u{k} v{v} missing")
        elif found[k] < v:
            count("reverted", f"u{k} at v{found[k]}, saved v{v}")
        elif found[k] > v:
            count("torn", f"u{k} at v{found[k]}, newer than saved v{v}")  # cannot happen
    for k in found:
        if k not in want:
            count("reverted", f"u{k} v{found[k]} came back after the editor deleted it")
    return out


def _lane(lane: int, cycles: int, totals: dict, lock: threading.Lock, env: dict) -> None:
    folder = Path(tempfile.mkdtemp(prefix=f"kit-stress-cas-{lane}-"))
    editor = None
    try:
        root = _make_workspace(folder)
        editor = subprocess.Popen([sys.executable, "-c", EDITOR, str(root / "MEMORY.md"), str(lane)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert editor.stdout.readline().strip() == "ready"
        seen: set[str] = set()
        for i in range(cycles):
            n = lane * 100_000 + i
            day = START + timedelta(days=i)
            _seed_fact(root, n, day)
            run_env = dict(env, KIT_NOW=f"{day.isoformat()}T20:00:00+00:00")
            t0 = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "kit", "dream", "--json", "-w", str(root)],
                                  capture_output=True, text=True, env=run_env, timeout=300)
            seconds = time.monotonic() - t0
            editor.stdin.write("pause\n")
            editor.stdin.flush()
            report = json.loads(editor.stdout.readline())
            result = _check(root, report["state"], seen)
            what = result.pop("what")
            promoted = 0
            if done.returncode == 0:
                promoted = len(json.loads(done.stdout).get("deep", {}).get("promoted", []))
            temps = [p.name for p in root.iterdir() if p.name.endswith(".tmp")]
            editor.stdin.write("resume\n")
            editor.stdin.flush()
            with lock:
                totals["cycles"] += 1
                totals["seconds"].append(seconds)
                for key, value in result.items():
                    totals[key] += value
                totals["edit_anomalies"] += len(report["anomalies"])
                totals["promoted"] += promoted
                totals["dream_failed"] += done.returncode != 0
                totals["temps_left"] += len(temps)
                if done.returncode != 0 and len(totals["failures"]) < 5:
                    totals["failures"].append(done.stderr.strip()[-300:])
                if any(result.values()) and len(totals["examples"]) < 5:
                    totals["examples"].append({"cycle": i, **result, "what": what[:3],
                                               "dream_s": round(seconds, 2), "anomalies": report["anomalies"][:3]})
    finally:
        if editor is not None:
            try:
                editor.stdin.write("stop\n")
                editor.stdin.flush()
            except (BrokenPipeError, ValueError):
                pass
            try:
                editor.wait(10)
            except subprocess.TimeoutExpired:
                editor.kill()
        shutil.rmtree(folder, ignore_errors=True)


def run(cycles: int = 500, lanes: int = 2, engine: Path | None = None) -> dict:
    if engine is not None:
        _ENGINE[:] = [engine]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if engine is not None:
        env["PYTHONPATH"] = str(engine)
    totals: dict = {"cycles": 0, "lost": 0, "reverted": 0, "torn": 0, "edit_anomalies": 0, "promoted": 0,
                    "dream_failed": 0, "temps_left": 0, "seconds": [], "failures": [], "examples": []}
    lock = threading.Lock()
    per = [cycles // lanes + (1 if i < cycles % lanes else 0) for i in range(lanes)]
    threads = [threading.Thread(target=_lane, args=(i, per[i], totals, lock, env)) for i in range(lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = sorted(totals.pop("seconds"))
    totals["median_dream_s"] = round(seconds[len(seconds) // 2], 2) if seconds else 0.0
    return totals


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--lanes", type=int, default=2)
    parser.add_argument("--against", type=Path, default=None, help="another checkout's engine/ folder")
    args = parser.parse_args()
    print(json.dumps(run(args.cycles, args.lanes, args.against), indent=1))
