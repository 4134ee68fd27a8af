"""How long must Kit watch a version it replaced, where the kernel tells who holds a file open?

filewrite swaps a new version in, then watches the replaced one for an in-place save that opened
the file before the swap. Where leases work (Linux), a save that holds the file open for writing
is seen as such and waited for, however long it takes; what no lease can see is an open() still in
flight at the swap: the path looked up (the old version), the write access not yet taken. The
watch's minimum (filewrite.IN_FLIGHT_S) only has to cover that gap. This measures it.

One process swaps as fast as it can (filewrite.update_file, one new `k<M>` line per write); other
processes save the same file in place as fast as they can (open r+, read, append one `e<N>` line,
close); optional busy processes load the CPUs so that an open() is descheduled mid-way. At the end
every `e` and `k` line must be in the file (or, for an `e` line, in a `.kept-` file beside it):

    python bench/stress/late_window.py --windows 0,0.001,0.005,0.01,0.05 --seconds 20 --load 2

prints, per window, the swaps made, the saves made and the lines lost.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"

KIT = r'''
import json, sys, time
from kit import filewrite
window, path, seconds = float(sys.argv[1]), sys.argv[2], float(sys.argv[3])
if hasattr(filewrite, "IN_FLIGHT_S"):
    filewrite.IN_FLIGHT_S = window
else:  # an engine from before the split: its one minimum is this window
    filewrite.LATE_WRITE_S = window
end = time.monotonic() + seconds
m = gave_up = 0
while time.monotonic() < end:
    line = f"k{m + 1}\n"
    try:
        filewrite.update_file(path, lambda text: text if line in text else text + line)
    except filewrite.ConflictError:  # the editors kept it changing: nothing written, try the next
        gave_up += 1
        continue
    m += 1
print(json.dumps({"swaps": m, "gave_up": gave_up}))
'''

EDITOR = r'''
import json, os, sys, time
path, tag, stop, pause = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
n = 0
while not os.path.exists(stop):
    n += 1
    with open(path, "r+", encoding="utf-8") as f:   # in place: the save Kit must not lose
        text = f.read()
        f.seek(0)
        f.write(text + f"{tag}{n}\n")
        f.truncate()
    time.sleep(pause)
print(json.dumps({"saves": n}))
'''

BUSY = "while True: pass"


def run(window: float, seconds: float, editors: int, load: int, pause: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ENGINE), "PYTHONDONTWRITEBYTECODE": "1"}
    with tempfile.TemporaryDirectory(prefix="kit-late-") as folder:
        f = Path(folder) / "MEMORY.md"
        f.write_text("# Memory\n")
        stop = Path(folder) / "stop"
        busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(load)]
        try:
            eds = [subprocess.Popen([sys.executable, "-c", EDITOR, str(f), f"e{i}-", str(stop), str(pause)],
                                    stdout=subprocess.PIPE, text=True, env=env) for i in range(editors)]
            kit = subprocess.run([sys.executable, "-c", KIT, str(window), str(f), str(seconds)],
                                 capture_output=True, text=True, env=env, check=True)
            stop.touch()
            saves = [json.loads(e.communicate(timeout=60)[0])["saves"] for e in eds]
        finally:
            for b in busy:
                b.kill()
                b.wait()
        swaps, gave_up = json.loads(kit.stdout)["swaps"], json.loads(kit.stdout)["gave_up"]
        text = f.read_text()
        kept = "".join(p.read_text() for p in Path(folder).glob("MEMORY.md.kept-*"))
        have = set(text.splitlines())
        lost_e = sum(1 for i, n in enumerate(saves) for k in range(1, n + 1)
                     if f"e{i}-{k}" not in have and f"e{i}-{k}" not in kept.splitlines())
        lost_k = sum(1 for k in range(1, swaps + 1) if f"k{k}" not in have)
        return {"window_ms": window * 1000, "swaps": swaps, "saves": sum(saves), "lost_saves": lost_e,
                "lost_kit_lines": lost_k, "gave_up": gave_up, "kept_files": len(list(Path(folder).glob("MEMORY.md.kept-*")))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--windows", default="0,0.001,0.005,0.01,0.05", help="seconds, comma-separated")
    ap.add_argument("--seconds", type=float, default=20.0, help="per window and round")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--editors", type=int, default=1, help="more than one loses saves to each other (no lock between them)")
    ap.add_argument("--pause", type=float, default=0.001, help="seconds between one editor's saves")
    ap.add_argument("--load", type=int, default=2, help="busy processes beside (CPU load)")
    args = ap.parse_args()
    windows = [float(w) for w in args.windows.split(",")]
    totals: dict[float, dict] = {}
    for _ in range(args.rounds):
        for w in windows:  # interleaved: every window sees the same machine
            r = run(w, args.seconds, args.editors, args.load, args.pause)
            print(json.dumps(r), flush=True)
            t = totals.setdefault(w, {"swaps": 0, "saves": 0, "lost_saves": 0, "lost_kit_lines": 0})
            for k in t:
                t[k] += r[k]
    print("\nwindow_ms  swaps  saves  lost_saves  lost_kit_lines")
    for w, t in totals.items():
        print(f"{w * 1000:9.1f}  {t['swaps']:5d}  {t['saves']:5d}  {t['lost_saves']:10d}  {t['lost_kit_lines']:14d}")


if __name__ == "__main__":
    main()
