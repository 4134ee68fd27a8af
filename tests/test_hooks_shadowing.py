"""A workspace hook never silently replaces a bundled one when it is invalid (issue 11, deliver 5):
OpenClaw's own session-memory HOOK.md + handler.ts, copied into a Kit workspace, must not stop /new
from archiving."""

from __future__ import annotations

from pathlib import Path

from kit.hooks.registry import registry_for
from kit.workspace import Workspace

# OpenClaw's bundled session-memory HOOK.md, as OpenClaw ships it (one copy for the suite)
OPENCLAW_SESSION_MEMORY = (Path(__file__).parent / "data" / "openclaw" / "session-memory" / "HOOK.md").read_text(encoding="utf-8")
CONVERSATION = [{"role": "user", "content": "We ship the billing API on Fridays."},
                {"role": "assistant", "content": "Noted."}]


def test_an_invalid_workspace_hook_keeps_the_bundled_one_in_force(ws_path, kit_now):
    kit_now("2026-05-07T14:30:00+00:00")
    folder = ws_path / "hooks" / "session-memory"
    folder.mkdir(parents=True)
    (folder / "HOOK.md").write_text(OPENCLAW_SESSION_MEMORY)
    (folder / "handler.ts").write_text("export default async (event) => {};\n")
    ws = Workspace.open(ws_path)
    registry = registry_for(ws)
    rows = [(r["name"], r["root"], r["valid"], r["runs"]) for r in registry.listing() if r["name"] == "session-memory"]
    assert rows == [("session-memory", "bundled", True, True), ("session-memory", "workspace", False, False)]
    outcome = registry.fire("command:new", {"command": "new", "args": "", "messages": CONVERSATION,
                                            "session_id": "s-1"}, session_key="main")
    assert outcome.ran == ["command-logger", "session-memory"] and outcome.errors == []
    assert (ws_path / "memory" / "2026-05-07-we-ship-the-billing-api-on.md").is_file()  # /new still archives
    found = [(p.severity, p.path, p.message) for p in ws.doctor(offline=True) if "stays in force" in p.message]
    # the fact once, at the workspace file (it was also stated under the bundled HOOK.md's path)
    assert found == [("warning", "hooks/session-memory/HOOK.md",
                      "the bundled hook 'session-memory' stays in force until this one is valid")]
    assert any(p.severity == "error" and p.path == "hooks/session-memory/HOOK.md" for p in ws.doctor(offline=True))
    bundled = [r for r in registry.listing() if r["name"] == "session-memory" and r["root"] == "bundled"]
    assert bundled[0]["problems"] == []  # nothing is wrong with the bundled HOOK.md


def test_a_valid_workspace_hook_still_overrides_the_bundled_one(ws_path):
    folder = ws_path / "hooks" / "session-memory"
    folder.mkdir(parents=True)
    (folder / "HOOK.md").write_text("---\nname: session-memory\ndescription: mine\nevents: [command:new]\n---\n")
    (folder / "handler.py").write_text("def handle(event):\n    return None\n")
    ws = Workspace.open(ws_path)
    rows = [(r["root"], r["valid"]) for r in registry_for(ws).listing() if r["name"] == "session-memory"]
    assert rows == [("workspace", True)]
