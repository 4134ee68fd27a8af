"""`make demo`: the offline main job, end to end, in ./demo-workspace (recreated each run).

1. `kit init --git` a workspace from workspace/ (git.autocommit on).
2. Write three weeks of realistic daily notes (facts worth keeping, chatter, shell commands).
3. Index them, then simulate two weeks of an agent's memory_search calls day by day with KIT_NOW
   (library search with record=True, source="tool") and dream every night, as cron would.
4. Show what reached MEMORY.md (git diff), the last deep report, the diary and the budgeted prompt.
Everything runs offline on the bundled embedding model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "demo-workspace"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

START = date(2026, 5, 1)

# Facts the user will keep needing, each first noted on some day (index into the three weeks).
FACTS = {
    1: ["Alice takes her flat white with oat milk, never dairy.",
        "Weekly 1:1 with Priya moved to Thursdays at 14:00."],
    2: ["Production deploys only on Tuesdays and Thursdays, after the 10:00 standup.",
        "$ kubectl rollout restart deployment/api -n production"],
    3: ["Alice's dentist is Dr. Okafor at the Harbour Street clinic; checkups every six months.",
        "The quarterly board report template lives in Finance > Shared > Templates."],
    4: ["The staging database is Postgres 16 on db-staging.internal, port 5433.",
        "| 12 | 34 | 56 |"],
    6: ["Grandma's birthday is 3 August; she loves lilies and hates roses.",
        "Rollback plan: keep the previous image tag pinned in deploy/values.yaml for 48 hours."],
    8: ["Ben is allergic to peanuts; always check bakery labels for his birthday cakes.",
        "Invoices for the Lisbon client go to accounts@lisbon-example.pt by the 5th."],
}
CHATTER = [
    "The printer on floor 3 jammed again.",
    "Read half of a long article about sourdough starters.",
    "Rain all afternoon; worked from the kitchen table.",
    "Tried the new ramen place near the station, too salty.",
    "Cleaned up the downloads folder.",
    "Long call, nothing decided, follow up next week maybe.",
]
# What the agent keeps asking memory about, day by day (several phrasings per fact).
QUERIES = [
    ["how does alice take her coffee", "alice milk preference", "what should I order for alice"],
    ["when can we deploy to production", "deploy days", "is today a deploy day"],
    ["who is alice's dentist", "dentist clinic address", "when is alice's next checkup"],
    ["staging database host and port", "connect to staging postgres"],
    ["ben allergy", "what is ben allergic to", "birthday cake for ben"],
    ["rollback plan for deploys", "how do we roll back a release"],
    ["restart the api in production"],
]


def kit(*args: str, quiet: bool = False) -> str:
    if not quiet:
        print(f"\n$ kit {' '.join(args)}", flush=True)
    done = subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True)
    if not quiet:
        print(done.stdout, end="")
        if done.stderr.strip():
            print(done.stderr, end="", file=sys.stderr)
    return done.stdout


def write_notes() -> None:
    for i in range(21):
        day = START + timedelta(days=i)
        lines = [f"# {day.isoformat()}", ""]
        lines += [f"- {fact}" for fact in FACTS.get(i, [])]
        lines += [f"- {CHATTER[(i * 7 + k) % len(CHATTER)]}" for k in range(2)]
        (DEMO / "memory" / f"{day.isoformat()}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def banner(text: str) -> None:
    print(f"\n{'=' * 100}\n{text}\n{'=' * 100}", flush=True)


MARK = Path(".kit") / "made-by-make-demo"  # in .kit/ (git-ignored): proof the folder is the demo's own


def main() -> int:
    if DEMO.exists():
        # a re-run replaces the demo's own folder, and says so; anything else there is never deleted
        if not (DEMO / MARK).is_file():
            print(f"make demo: {DEMO} exists and was not made by make demo: move it away first "
                  "(nothing was changed)", file=sys.stderr)
            return 1
        print(f"replacing {DEMO} (made by an earlier make demo; your edits there are not kept)")
        shutil.rmtree(DEMO)
    banner("1. a fresh workspace, under git")
    kit("init", str(DEMO), "--git")
    (DEMO / MARK).parent.mkdir(exist_ok=True)
    (DEMO / MARK).write_text("./demo-workspace is rebuilt by each `make demo`\n", encoding="utf-8")
    first_commit = subprocess.run(["git", "-C", str(DEMO), "rev-parse", "HEAD"], capture_output=True,
                                  text=True).stdout.strip()

    banner("2. three weeks of daily notes")
    write_notes()
    print(f"wrote {len(list((DEMO / 'memory').glob('2026-*.md')))} notes in {DEMO / 'memory'}")
    print((DEMO / "memory" / "2026-05-03.md").read_text())

    from kit.dreaming.runner import run_dream
    from kit.memory.service import memory_for
    from kit.workspace import Workspace

    banner("3. index, then two weeks of agent recall (KIT_NOW steps day by day) and a dream every night")
    os.environ["KIT_NOW"] = "2026-05-21T09:00:00+00:00"
    ws = Workspace.open(DEMO)
    mem = memory_for(ws)
    synced = mem.sync()
    info = synced.to_json()
    # as `kit memory index` says it: a chunk whose text was embedded before comes from the cache
    print(f"indexed {info['files']} files into {info['chunks']} chunks ({info['embedded']} distinct texts "
          f"embedded, {info['cached']} from cache, mode {info['mode']}) in {info['seconds']:.1f} s")
    for i in range(14):
        day = date(2026, 5, 8) + timedelta(days=i)
        recorded = 0
        for j, group in enumerate(QUERIES):
            # not every topic comes up every day; the restart command comes up a lot
            if (i + j) % 3 == 0 or j == len(QUERIES) - 1:
                os.environ["KIT_NOW"] = f"{day.isoformat()}T{9 + j:02d}:15:00+00:00"
                result = mem.search(group[(i + j) % len(group)], record=True, source="tool")
                recorded += getattr(result, "recorded", 0) or 0
        os.environ["KIT_NOW"] = f"{day.isoformat()}T23:30:00+00:00"
        dream = run_dream(ws)
        print(f"{day}: {recorded:2d} recalls recorded; dream promoted {len(dream.promoted)}"
              + ("" if not dream.git else f"; git: {dream.git['note']}" if dream.git["committed"]
                 else f"; no commit ({dream.git['note'].split(';')[0]})"))

    banner("4. what dreaming wrote")
    print("\n$ git log --oneline\n" + subprocess.run(["git", "-C", str(DEMO), "log", "--oneline"],
                                                   capture_output=True, text=True).stdout)
    waiting = subprocess.run(["git", "-C", str(DEMO), "status", "--short", "--untracked-files=all", "--",
                              "memory/dreaming", "DREAMS.md"], capture_output=True, text=True).stdout.splitlines()
    print(f"{len(waiting)} report and diary files written since the last memory change are uncommitted: they "
          "join the next dream that changes MEMORY.md (no 'promote 0 memories' commits)\n")
    diff = subprocess.run(["git", "-C", str(DEMO), "diff", first_commit, "HEAD", "--", "MEMORY.md"],
                          capture_output=True, text=True).stdout
    print("$ git diff <init> HEAD -- MEMORY.md\n" + diff)
    reports = sorted((DEMO / "memory" / "dreaming" / "deep").glob("*.md"))
    promoting = [p for p in reports if "## Promoted" in p.read_text()]
    if promoting:
        print(f"--- {promoting[-1].relative_to(DEMO)} ---\n{promoting[-1].read_text()}")
    explained = kit("memory", "explain", "kubectl rollout restart", "-w", str(DEMO), quiet=True)
    print("$ kit memory explain 'kubectl rollout restart'   # recalled every day, never promoted: junk\n" + explained)
    entries = (DEMO / "DREAMS.md").read_text().split("\n## ")[1:]
    wrote = [e for e in entries if "long-term memory:" in e]
    print("--- DREAMS.md (the first night that promoted, and the last night) ---")
    for e in ([wrote[0]] if wrote else []) + [entries[-1]]:
        print("## " + e.rstrip("\n") + "\n")

    banner("5. the budgeted system prompt the agent now gets")
    os.environ["KIT_NOW"] = "2026-05-22T09:00:00+00:00"
    ws.reload()
    try:
        prompt = ws.prompt()
    except ImportError:
        print((DEMO / "MEMORY.md").read_text())
    else:
        print(prompt.prompt)
        print("\n--- budget ---")
        for f in prompt.files:
            print(f"{f.name:<14} {f.raw_chars:>6} raw {f.injected_chars:>6} injected"
                  + (f"  cut: {f.reason}" if f.truncated else ""))
    # the demo's days are fixed in May 2026: on today's clock every recall is old, and `kit dream`
    # or `kit memory promote` there said "not recalled lately" with no hint why
    banner("6. explore it yourself")
    print(f"The demo's clock is {os.environ['KIT_NOW']}; commands there need it too:\n"
          f"  . .venv/bin/activate && cd {DEMO.name} && export KIT_NOW={os.environ['KIT_NOW']}\n"
          "  kit memory promote; kit memory explain 'flat white'; kit dream --dry-run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
