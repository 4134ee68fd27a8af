"""Workspace hook code runs only when trusted by content hash; validation and doctor."""

from __future__ import annotations

import json

from helpers_hooks import hooks_log, write_hook
from kit.hooks.registry import doctor_checks, registry_for
from kit.hooks.spec import hook_digest
from kit.trust import TrustStore
from kit.workspace import Workspace

MARKER_HANDLER = """\
from pathlib import Path
def handle(event):
    Path(event.workspace, "marker.txt").write_text("ran v1")
"""


def test_untrusted_workspace_hook_does_not_run_until_trusted_and_again_after_an_edit(ws_path):
    folder = write_hook(ws_path / "hooks", "marker", ["session:start"], MARKER_HANDLER)
    ws = Workspace.open(ws_path)
    registry = registry_for(ws)

    outcome = registry.fire("session:start", {})
    assert not (ws_path / "marker.txt").exists()
    assert outcome.ran == []
    assert outcome.skipped == ["marker: untrusted workspace code (run `kit hooks trust marker` after reviewing it)"]
    assert "SKIP session:start hook=marker: untrusted workspace code" in hooks_log(ws_path)
    assert [h.name for h in registry.untrusted()] == ["marker"]

    entry = registry.trust("marker")
    assert entry.digest == hook_digest(folder)
    assert TrustStore().is_trusted("hook", "marker", entry.digest)
    assert registry.fire("session:start", {}).ran == ["marker"]
    assert (ws_path / "marker.txt").read_text() == "ran v1"

    # editing handler.py (not a tracked document: the snapshot version does not change)
    (ws_path / "marker.txt").unlink()
    (folder / "handler.py").write_text(MARKER_HANDLER.replace("ran v1", "ran v2"))
    again = registry_for(ws).fire("session:start", {})
    assert again.ran == [] and again.skipped
    assert not (ws_path / "marker.txt").exists()

    registry_for(ws).trust("marker")
    registry_for(ws).fire("session:start", {})
    assert (ws_path / "marker.txt").read_text() == "ran v2"  # the edited handler was loaded afresh


def test_editing_a_script_run_by_a_command_hook_needs_trust_again(ws_path):
    folder = write_hook(ws_path / "hooks", "cmd", ["heartbeat"], command='sh "$KIT_HOOK_DIR/run.sh"',
                        files={"run.sh": "echo one > out.txt\n"})
    ws = Workspace.open(ws_path)
    registry_for(ws).trust("cmd")
    assert registry_for(ws).fire("heartbeat", {}).ran == ["cmd"]
    (folder / "run.sh").write_text("echo two > out.txt\n")
    assert registry_for(ws).fire("heartbeat", {}).ran == []
    assert (ws_path / "out.txt").read_text() == "one\n"  # commands run in the workspace root


def test_a_command_hook_that_leaves_files_in_its_folder_stays_trusted(ws_path):
    """Commands run in the workspace root, and what running may leave in the hook folder (logs,
    dotfiles, Python caches) is not part of the trust hash: a hook must not untrust itself."""
    folder = write_hook(ws_path / "hooks", "busy", ["heartbeat"], command='sh "$KIT_HOOK_DIR/run.sh"', files={
        "run.sh": 'pwd > where.txt\necho ran >> "$KIT_HOOK_DIR/run.log"\n'
                  'echo 1 > "$KIT_HOOK_DIR/.state"\nmkdir -p "$KIT_HOOK_DIR/__pycache__"\n'
                  'echo x > "$KIT_HOOK_DIR/__pycache__/m.cpython-312.pyc"\necho y > "$KIT_HOOK_DIR/cache.pyc"\n'})
    ws = Workspace.open(ws_path)
    registry_for(ws).trust("busy")
    before = registry_for(ws).get("busy").digest()
    for _ in range(2):
        assert registry_for(ws).fire("heartbeat", {}).ran == ["busy"]
    assert (ws_path / "where.txt").read_text() == f"{ws_path.resolve()}\n"
    assert (folder / "run.log").read_text() == "ran\nran\n"
    assert registry_for(ws).get("busy").digest() == before
    assert registry_for(ws).untrusted() == []
    # any other file in the folder still counts
    (folder / "notes.txt").write_text("new\n")
    assert registry_for(ws).get("busy").digest() != before


def test_untrusted_handler_is_never_imported(ws_path):
    write_hook(ws_path / "hooks", "importer", ["heartbeat"],
               "from pathlib import Path\nPath(__file__).with_name('imported.txt').write_text('x')\n"
               "def handle(e):\n    return None\n")
    registry_for(Workspace.open(ws_path)).fire("heartbeat", {})
    assert not (ws_path / "hooks" / "importer" / "imported.txt").exists()


def test_bundled_and_user_hooks_need_no_trust(ws_path):
    from kit.paths import user_hooks_dir

    write_hook(user_hooks_dir(), "mine", ["heartbeat"], "def handle(e):\n    return None\n")
    registry = registry_for(Workspace.open(ws_path))
    roots = {h.name: h.root for h in registry.hooks}
    assert roots == {"command-logger": "bundled", "session-memory": "bundled", "mine": "user"}
    assert registry.untrusted() == []
    assert registry.trust("mine") is None


def test_invalid_hooks_are_reported_and_never_break_loading(ws_path):
    hooks = ws_path / "hooks"
    (hooks / "no-events").mkdir(parents=True)
    (hooks / "no-events" / "HOOK.md").write_text("---\nname: no-events\ndescription: d\n---\n")
    (hooks / "no-events" / "handler.py").write_text("def handle(e): pass\n")
    (hooks / "wrong-name").mkdir()
    (hooks / "wrong-name" / "HOOK.md").write_text(
        "---\nname: other\ndescription: d\nevents: [heartbeat]\ntimeout_s: -1\n---\n")
    (hooks / "no-handler").mkdir()
    (hooks / "no-handler" / "HOOK.md").write_text("---\nname: no-handler\ndescription: d\nevents: [heartbeat]\n---\n")
    (hooks / "broken-yaml").mkdir()
    (hooks / "broken-yaml" / "HOOK.md").write_text("---\nname: broken-yaml\nevents: [heartbeat\n---\n")
    write_hook(hooks, "fine", ["heartbeat", "made:up"], "def handle(e):\n    return None\n")

    ws = Workspace.open(ws_path)
    registry = registry_for(ws)
    invalid = {h.name: h.errors for h in registry.invalid()}
    assert invalid["no-events"] == ("'events' must be a non-empty list of event names, such as tool:before",)
    assert invalid["wrong-name"] == (
        "'name' 'other' must equal the folder name 'wrong-name'",
        "'timeout_s' must be a positive number of seconds, not -1",
        "no handler.py next to HOOK.md and no 'command' in its frontmatter",
    )
    assert invalid["no-handler"] == ("no handler.py next to HOOK.md and no 'command' in its frontmatter",)
    assert invalid["broken-yaml"][0].startswith("invalid frontmatter YAML")
    assert [h.name for h in registry.for_event("heartbeat")] == ["fine"]

    findings = doctor_checks(ws)
    errors = [(f.path, f.message) for f in findings if f.severity == "error"]
    assert ("hooks/no-handler/HOOK.md",
            "no handler.py next to HOOK.md and no 'command' in its frontmatter") in errors
    broken = [f for f in findings if f.path == "hooks/broken-yaml/HOOK.md"]
    assert [f.line for f in broken] == [3]  # the unclosed list
    # each validation error names the line of its key; one no key is about names the file
    assert [(f.line, f.message) for f in findings if f.path == "hooks/wrong-name/HOOK.md"] == [
        (2, "'name' 'other' must equal the folder name 'wrong-name'"),
        (5, "'timeout_s' must be a positive number of seconds, not -1"),
        (None, "no handler.py next to HOOK.md and no 'command' in its frontmatter"),
    ]
    assert {h.name: h.line for h in registry.invalid()} == {
        "no-events": 1, "wrong-name": 2, "no-handler": 1, "broken-yaml": 3}
    warnings = [f.message for f in findings if f.severity == "warning"]
    assert "event 'made:up' is not one Kit fires" in warnings
    assert any("hook 'fine' has workspace code that is not trusted" in w and "kit hooks trust fine" in w for w in warnings)


def test_cli_list_fire_trust(ws_path, cli):
    write_hook(ws_path / "hooks", "guard", ["tool:before"],
               "def handle(e):\n    return {'block': True, 'reason': 'guarded'}\n")
    listed = json.loads(cli("hooks", "list", "--json", "-w", ws_path).output)
    rows = {r["name"]: r for r in listed["hooks"]}
    assert rows["guard"]["trusted"] is False and rows["guard"]["runs"] is False
    assert rows["session-memory"]["trusted"] is True and rows["session-memory"]["root"] == "bundled"

    before = json.loads(cli("hooks", "fire", "tool:before", "--data", '{"name": "exec"}', "--json", "-w", ws_path).output)
    assert before["blocked"] is False and before["skipped"]

    trusted = cli("hooks", "trust", "guard", "--json", "-w", ws_path)
    assert trusted.exit_code == 0
    assert json.loads(trusted.output)["digest"] == hook_digest(ws_path / "hooks" / "guard")

    after = cli("hooks", "fire", "tool:before", "--data", '{"name": "exec"}', "--json", "-w", ws_path)
    data = json.loads(after.output)
    assert (data["blocked"], data["reason"], data["blocked_by"]) == (True, "guarded", "guard")

    missing = cli("hooks", "trust", "nope", "-w", ws_path)
    assert missing.exit_code == 1
    bad = cli("hooks", "fire", "x:y", "--data", "[1]", "-w", ws_path)
    assert bad.exit_code == 2


def test_ask_trust_trusts_only_what_the_user_accepts(ws_path):
    write_hook(ws_path / "hooks", "yes-hook", ["heartbeat"], "def handle(e):\n    return None\n")
    write_hook(ws_path / "hooks", "no-hook", ["heartbeat"], "def handle(e):\n    return None\n")
    registry = registry_for(Workspace.open(ws_path))
    offered = []

    def confirm(hook):
        offered.append(hook.name)
        return hook.name == "yes-hook"

    assert registry.ask_trust(confirm) == ["yes-hook"]
    assert offered == ["no-hook", "yes-hook"]
    assert [h.name for h in registry.untrusted()] == ["no-hook"]
    assert registry.fire("heartbeat", {}).ran == ["yes-hook"]


def test_data_that_cannot_be_deep_copied_still_fires(ws_path):
    import threading

    from kit.paths import user_hooks_dir

    write_hook(user_hooks_dir(), "reader", ["tool:after"], "def handle(e):\n    assert e.data['n'] == 1\n")
    lock = threading.Lock()
    outcome = registry_for(Workspace.open(ws_path)).fire("tool:after", {"n": 1, "lock": lock})
    assert outcome.errors == [] and outcome.ran == ["reader"]
    assert outcome.data["lock"] is lock


def test_cli_human_output(ws_path, cli):
    write_hook(ws_path / "hooks", "guard", ["tool:before"], "def handle(e):\n    return {'block': True, 'reason': 'no [x]'}\n")
    listed = cli("hooks", "list", "-w", ws_path).output
    assert "guard" in listed and "untrusted" in listed and "kit hooks trust guard" in listed
    assert "session-memory       active" in listed
    (ws_path / "hooks" / "bad").mkdir()
    (ws_path / "hooks" / "bad" / "HOOK.md").write_text("---\nname: bad\ndescription: d\nevents: [x\n---\n")
    listed = cli("hooks", "list", "-w", ws_path).output
    assert "error: hooks/bad/HOOK.md:4: invalid frontmatter YAML" in listed
    cli("hooks", "trust", "guard", "-w", ws_path)
    fired = cli("hooks", "fire", "tool:before", "-w", ws_path).output
    assert "blocked by guard: no [x]" in fired


def test_a_misspelt_event_name_gets_a_did_you_mean(ws_path):
    write_hook(ws_path / "hooks", "typos", ["memory:wrte", "tool:befor", "sesion", "made:up", "command:deploy",
                                            "tool:*", "tool", "command:*", "*", "heartbeat", "dream:st*rt", "dream:stop*"],
               "def handle(e):\n    return None\n")
    [hook] = [h for h in registry_for(Workspace.open(ws_path)).hooks if h.name == "typos"]
    assert hook.valid
    assert hook.warnings == (
        "event 'memory:wrte' is not one Kit fires; did you mean 'memory:write'?",
        "event 'tool:befor' is not one Kit fires; did you mean 'tool:before'?",
        "event 'sesion' is not one Kit fires; did you mean 'session'?",
        "event 'made:up' is not one Kit fires",
        "event 'dream:stop*' is not one Kit fires",
    )


def test_trusting_an_invalid_hook_is_refused_with_its_errors(ws_path, cli):
    write_hook(ws_path / "hooks", "broken", ["heartbeat"])  # no handler.py, no command
    result = cli("hooks", "trust", "broken", "-w", ws_path)
    assert result.exit_code == 1
    assert result.stderr == (
        "kit: hooks/broken/HOOK.md:1: hook 'broken' is invalid, so it is not trusted: no handler.py next to "
        "HOOK.md and no 'command' in its frontmatter (fix it, then run `kit hooks trust broken`)\n")
    assert result.stdout == ""
    assert cli("hooks", "trust", "broken", "--json", "-w", ws_path).exit_code == 1
    from kit.trust import TrustStore

    assert not TrustStore().is_trusted("hook", "broken", hook_digest(ws_path / "hooks" / "broken"))


def test_firing_an_event_kit_never_fires_warns(ws_path, cli):
    bogus = cli("hooks", "fire", "bogus:event", "-w", ws_path)
    assert bogus.exit_code == 0
    assert bogus.stderr == ("kit: warning: no such event: 'bogus:event' is not one Kit fires "
                            "(a custom slash command is command:<name>)\n")
    typo = cli("hooks", "fire", "tool:befor", "--json", "-w", ws_path)
    assert typo.exit_code == 0 and json.loads(typo.stdout)["event"] == "tool:befor"
    assert typo.stderr == "kit: warning: no such event: 'tool:befor' is not one Kit fires; did you mean 'tool:before'?\n"
    for event in ("command:deploy", "tool:before", "heartbeat"):
        fired = cli("hooks", "fire", event, "-w", ws_path)
        assert (fired.exit_code, fired.stderr) == (0, ""), event


def test_cli_list_has_a_header_row(ws_path, cli):
    lines = cli("hooks", "list", "-w", ws_path).stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "ROOT", "KIND", "EVENTS"]
    assert lines[1].split()[:4] == ["command-logger", "active", "bundled", "handler"]


def test_a_command_naming_a_file_the_trust_hash_skips_is_warned_about(ws_path):
    """Dotfiles and logs are left out of the hash, so a command running one could change without
    untrusting the hook: `kit hooks list` and doctor warn. Files it writes to are fine."""
    write_hook(ws_path / "hooks", "sneaky", ["heartbeat"], command='sh "$KIT_HOOK_DIR/.run.sh"',
               files={".run.sh": "echo hi\n", "events.log": ""})
    write_hook(ws_path / "hooks", "logger", ["heartbeat"],
               command='sh "$KIT_HOOK_DIR/run.sh" >> "$KIT_HOOK_DIR/events.log"',
               files={"run.sh": "echo hi\n", "events.log": "earlier\n"})
    registry = registry_for(Workspace.open(ws_path))
    assert registry.get("sneaky").valid
    assert registry.get("sneaky").warnings == (
        "'command' names .run.sh, which the trust hash does not cover (dotfiles, *.log, *.pyc, "
        "__pycache__): editing it would not untrust the hook; rename it",)
    assert registry.get("logger").warnings == ()
