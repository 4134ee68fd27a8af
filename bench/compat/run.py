"""Issue 11 (compat) benchmark: what Claude Code hooks and the wider skill scan cost.

1. One `read_file` tool call through `execute_tool`: hooks.claude_code off; on with settings whose
   only PreToolUse group matches another tool (Bash); on with a matching no-op `python3` hook
   (one process per call, as in Claude Code).
2. The scanner's rules over real-shaped inputs, uncached: an API client script and a SKILL.md
   with code blocks (the pass SKILL.md now gets), per file.

Medians of interleaved rounds; ratios in the same run. Never asserts on speed.

    python bench/compat/run.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _isolated import isolate_home  # noqa: E402

CLIENT = """\
import os
import requests

def ask(prompt):
    headers = {"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"}
    return requests.post("https://api.openai.com/v1/chat/completions", headers=headers,
                         json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}).json()
""" * 20
SKILL_MD = "---\nname: x\ndescription: y\n---\n" + ("Prose line about the tool.\n" * 30 + "```bash\nuv run {baseDir}/s.py --flag\n"
                                                     "curl -s https://api.example.com/v1 -H \"Authorization: $API_TOKEN\"\n```\n") * 5


def workspace(root: Path, mode: str):
    from kit.hooks.registry import registry_for
    from kit.init import init_workspace
    from kit.workspace import Workspace

    init_workspace(root)
    if mode != "off":
        (root / "kit.yaml").write_text("hooks:\n  claude_code: true\n", encoding="utf-8")
        matcher = "Bash" if mode == "other" else "Read"
        command = "python3 -c 'import sys, json; json.load(sys.stdin)'"
        (root / ".claude").mkdir()
        (root / ".claude" / "settings.json").write_text(json.dumps(
            {"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}}))
    ws = Workspace.open(root)
    if mode != "off":
        registry_for(ws).trust("claude-code")
    return ws


def time_call(ws, n: int) -> float:
    from kit.tools import ToolContext, execute_tool

    ctx = ToolContext(ws, session_id="bench")
    start = time.perf_counter()
    for _ in range(n):
        out = execute_tool(ctx, "read_file", {"path": "SOUL.md"})
        assert out.ok, out.result
    return (time.perf_counter() - start) / n * 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        isolate_home(tmp)
        spaces = {mode: workspace(Path(tmp) / mode, mode) for mode in ("off", "other", "matching")}
        times: dict[str, list[float]] = {mode: [] for mode in spaces}
        for _ in range(args.rounds):  # interleaved, so load changes hit every mode alike
            for mode, ws in spaces.items():
                times[mode].append(time_call(ws, 1 if mode == "matching" else 50))
        med = {mode: statistics.median(v) for mode, v in times.items()}
        print("read_file through execute_tool, ms per call (median of rounds):")
        print(f"  hooks.claude_code off                 {med['off']:8.3f}")
        print(f"  on, PreToolUse only for Bash          {med['other']:8.3f}  ({med['other'] / med['off']:.2f}x off)")
        print(f"  on, a matching python3 hook           {med['matching']:8.3f}  ({med['matching'] / med['off']:.1f}x off)")

        from kit.skills.scanner import scan_text

        for label, text, rel in (("API client script (140 lines)", CLIENT, "scripts/client.py"),
                                 ("SKILL.md with 5 code blocks", SKILL_MD, "SKILL.md")):
            runs = []
            for _ in range(args.rounds):
                start = time.perf_counter()
                found = scan_text(text, rel)
                runs.append((time.perf_counter() - start) * 1000)
            print(f"scan_text {label:<32} {statistics.median(runs):7.3f} ms  findings: "
                  f"{sorted({f.details['rule'] for f in found}) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
