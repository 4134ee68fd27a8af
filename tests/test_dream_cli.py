"""The commands: kit dream --json, memory promote/explain, the lock across processes, git, offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import run_kit
from helpers_dream import days, recall, tree, write_note
from kit import clock
from kit.dreaming.runner import run_dream
from kit.memory.recall import claim_hash

FACTS = [
    "Alice drinks her flat white with oat milk, never dairy.",
    "Production deploys happen on Tuesdays after the 10:00 standup.",
]


def seed(ws, facts=FACTS, start="2026-05-04", n=4):
    write_note(ws.root, "2026-05-01", list(facts))
    for d_i, day in enumerate(days(start, n)):
        for f_i, fact in enumerate(facts):
            recall(ws, day, fact, f"question {d_i} {f_i}", note_day="2026-05-01")
    return f"{days(start, n)[-1]}T20:00:00+00:00"


def test_dream_json(workspace, cli):
    now = seed(workspace)
    res = cli("dream", "--json", "-w", workspace.root, env={"KIT_NOW": now})
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["now"] == "2026-05-07T20:00:00+00:00" and data["applied"] is True
    assert data["light"]["staged"] == ["memory/2026-05-01.md:3:3", "memory/2026-05-01.md:4:4"]
    assert {"themes", "truths"} <= set(data["rem"])
    cand = data["deep"]["candidates"][0]
    assert set(cand) >= {"key", "snippet", "score", "components", "recall_count", "unique_queries", "recall_days",
                         "passed", "blocked_by"}
    assert cand["recall_count"] == 4 and cand["unique_queries"] == 4 and cand["recall_days"] == 4
    assert cand["passed"] is True and cand["blocked_by"] == []
    assert data["deep"]["promoted"] == ["memory/2026-05-01.md:3:3", "memory/2026-05-01.md:4:4"]


def test_an_idle_night_says_it_wrote_no_report(workspace, cli):
    """Regression (a new-user pass): the README said every run writes reports; an idle night writes
    none (no daily noise, no commit) and printed 'promoted 0' without saying so."""
    idle = cli("dream", "-w", workspace.root, env={"KIT_NOW": "2026-05-07T03:00:00+00:00"})
    assert idle.exit_code == 0, idle.output
    assert idle.output.splitlines()[-1] == ("nothing to report: no recalls in the lookback window, so no report "
                                            "or diary entry was written")
    assert not (workspace.root / "memory" / "dreaming").exists()
    busy = cli("dream", "-w", workspace.root, env={"KIT_NOW": seed(workspace)})
    assert "nothing to report" not in busy.output and (workspace.root / "memory" / "dreaming").is_dir()


def test_promote_text_output_shows_each_fact_next_to_key_and_score(workspace, cli):
    now = seed(workspace, facts=[*FACTS, "Ben is allergic to peanuts, so we always check every bakery label twice "
                                         "before buying a birthday cake for him."])
    res = cli("memory", "promote", "-w", workspace.root, env={"KIT_NOW": now})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    facts = [FACTS[0], "Production deploys happen on Tuesdays after the 10:00…",
             "Ben is allergic to peanuts, so we always check every bakery…"]  # each cut at a word before 60
    fact_width = max(map(len, facts))
    assert lines[0] == "score  r/q/d  key                       " + "fact".ljust(fact_width) + "  status"
    rows = {line.split()[2]: line for line in lines[1:4]}
    # the fact before the status, which comes last and unpadded (a long blocked reason widened every row)
    assert rows["memory/2026-05-01.md:3:3"].endswith("  " + FACTS[0].ljust(fact_width) + "  would promote")
    assert rows["memory/2026-05-01.md:4:4"].endswith("  " + facts[1].ljust(fact_width) + "  would promote")
    assert rows["memory/2026-05-01.md:5:5"].endswith("  " + facts[2].ljust(fact_width) + "  would promote")
    assert all(line.split()[1] == "4/4/4" for line in rows.values())
    assert lines[4:] == ["r/q/d = credited recalls / queries / days, what the gates count (`kit memory explain KEY`: "
                         "raw counts too)",
                         "score = Deep's alone: `kit dream` runs Light and REM first, and their hits can raise it",
                         "would promote (run with --apply): 3"]


def test_promote_with_nothing_recalled_says_so(workspace, cli):
    """Regression (a new-user pass): a new workspace printed a bare header and no rows."""
    res = cli("memory", "promote", "-w", workspace.root)
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == ["no candidates yet: nothing from the daily notes has been recalled (searches by "
                                       "the agent, and `kit memory search --record`, log what they find)"]


def test_promote_and_the_deep_report_show_the_counts_the_gates_compare(workspace, cli):
    """Regression (a new-user pass): a line found only as a weak side hit showed "3/3/3" (raw) in
    `kit memory promote` and "3 recalls, 3 queries, 3 days" in the Deep report, beside "recalled on
    too few days": none of its hits was credited. Both now show the credited counts."""
    from helpers_dream import searched

    side = "The kettle in the office is descaled on Fridays."
    write_note(workspace.root, "2026-05-01", [*FACTS, side])
    for i, day in enumerate(days("2026-05-04", 3)):  # the fact answers; the kettle line trails far behind
        searched(workspace, day, f"how does alice take her coffee {i}", [(FACTS[0], 0.8), (side, 0.3)],
                 note_day="2026-05-01")
    now = "2026-05-06T20:00:00+00:00"
    res = cli("memory", "promote", "-w", workspace.root, env={"KIT_NOW": now})
    rows = {line.split()[2]: line.split()[1] for line in res.output.splitlines()[1:3]}
    assert rows == {"memory/2026-05-01.md:3:3": "3/3/3", "memory/2026-05-01.md:5:5": "0/0/0"}
    cli("dream", "-w", workspace.root, env={"KIT_NOW": now})
    report = (workspace.root / "memory/dreaming/deep/2026-05-06.md").read_text()
    line = next(x for x in report.splitlines() if x.startswith("- `memory/2026-05-01.md:5:5`"))
    assert ", 0 of 3 recalls credited, on 0 of 3 days, by 0 of 3 queries — The kettle" in line
    assert line.endswith("— The kettle in the office is descaled on Fridays. (blocked: score too low; too few credited "
                         "recalls; recalled on too few days; recalled by too few queries)"), line
    # and explain says why 3 recalls made no credited day (a new user read it as a contradiction)
    rule = "         a day or a query counts when one hit there earned 0.50 or more"
    assert rule in cli("memory", "explain", "memory/2026-05-01.md:5:5", "-w", workspace.root).output.splitlines()
    assert rule not in cli("memory", "explain", "memory/2026-05-01.md:3:3", "-w", workspace.root).output.splitlines()


def test_dream_single_phase_and_dry_run(workspace, cli):
    now = seed(workspace)
    before = tree(workspace.root)
    res = cli("dream", "--phase", "deep", "--dry-run", "--json", "-w", workspace.root, env={"KIT_NOW": now})
    data = json.loads(res.output)
    assert data["applied"] is False and data["light"] is None and data["rem"] is None
    assert len(data["deep"]["promoted"]) == 2
    assert tree(workspace.root) == before
    res = cli("dream", "--phase", "light", "-w", workspace.root, env={"KIT_NOW": now})
    assert res.exit_code == 0
    assert (workspace.root / "memory/dreaming/light/2026-05-07.md").exists()
    assert not (workspace.root / "memory/dreaming/deep").exists()
    assert "Promoted memories" not in (workspace.root / "MEMORY.md").read_text()


def test_promote_ranks_then_applies(workspace, cli):
    now = seed(workspace)
    from click.testing import CliRunner

    from kit.cli.promote_cmd import promote

    runner = CliRunner()
    env = {"KIT_NOW": now}
    res = runner.invoke(promote, ["--json", "-w", str(workspace.root)], env=env)
    data = json.loads(res.output)
    assert data["applied"] is False and len(data["promoted"]) == 2
    assert "Promoted memories" not in (workspace.root / "MEMORY.md").read_text()
    res = runner.invoke(promote, ["--apply", "--json", "-w", str(workspace.root)], env=env)
    data = json.loads(res.output)
    assert data["applied"] is True
    assert FACTS[0] in (workspace.root / "MEMORY.md").read_text()
    # promote runs Deep only: no light/REM reports
    assert not (workspace.root / "memory/dreaming/light").exists()


def test_second_process_waits_then_exits_3(workspace, tmp_path):
    now = seed(workspace)
    started, go = tmp_path / "started", tmp_path / "go"
    holder = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from kit.dreaming import deep
        from kit.dreaming.runner import run_dream
        from kit.workspace import Workspace
        real = deep.plan
        def slow(*a, **k):
            Path({str(started)!r}).write_text("x")
            while not Path({str(go)!r}).exists():
                time.sleep(0.05)
            return real(*a, **k)
        deep.plan = slow
        print(len(run_dream(Workspace.open({str(workspace.root)!r})).promoted))
    """)
    env = dict(os.environ, KIT_NOW=now)
    first = subprocess.Popen([sys.executable, "-c", holder], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        for _ in range(1200):
            if started.exists() or first.poll() is not None:
                break
            time.sleep(0.05)
        assert started.exists(), first.communicate()
        second = run_kit("dream", "-w", workspace.root, env={"KIT_NOW": now, "KIT_DREAM_LOCK_WAIT": "0.5"})
        assert second.returncode == 3
        assert "another dream is running" in second.stderr and f"pid {first.pid}" in second.stderr
        assert second.stdout == ""
    finally:
        go.write_text("go")
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert out.strip() == "2"
    text = (workspace.root / "MEMORY.md").read_text()
    assert text.count("<!-- kit:promoted") == 2 and text.endswith("\n")
    assert not list(workspace.root.glob(".MEMORY.md.*"))
    from kit.fsutil import LockFile

    lock = LockFile(workspace.root / ".kit/locks/dream.lock")  # released, and no owner note left
    assert not lock.is_locked() and not lock.owner_path.exists()


def test_dreaming_is_offline(workspace, tmp_path):
    now = seed(workspace)
    script = textwrap.dedent(f"""
        import socket
        def refuse(*a, **k):
            raise RuntimeError("network access attempted")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from kit.dreaming.runner import run_dream
        from kit.workspace import Workspace
        r = run_dream(Workspace.open({str(workspace.root)!r}))
        print(r.similarity, len(r.promoted))
    """)
    env = dict(os.environ, KIT_NOW=now, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["embeddings", "2"]


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def test_git_autocommit(tmp_path, monkeypatch):
    from kit.init import init_workspace
    from kit.workspace import Workspace

    root = tmp_path / "gws"
    init_workspace(root, git=True)
    ws = Workspace.open(root)
    assert ws.config.get("git.autocommit") is True
    monkeypatch.setenv("KIT_NOW", seed(ws))
    head = _git(root, "rev-parse", "HEAD").strip()
    (root / "scratch.txt").write_text("not the dream's business\n")
    result = run_dream(ws)
    assert result.git["committed"] is True
    assert _git(root, "log", "-1", "--format=%s").strip() == "dream: promote 2 memories (2026-05-07)"
    # dated by Kit's clock (KIT_NOW), like the files it commits
    assert _git(root, "log", "-1", "--format=%aI %cI").split() == [clock.now().isoformat(timespec="seconds")] * 2
    files = _git(root, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(files) == sorted(result.changed) == [
        "DREAMS.md", "MEMORY.md", "memory/dreaming/deep/2026-05-07.md", "memory/dreaming/light/2026-05-07.md",
        "memory/dreaming/rem/2026-05-07.md"]
    assert _git(root, "rev-parse", "HEAD~1").strip() == head
    assert "?? scratch.txt" in _git(root, "status", "--porcelain")
    # an idle re-run changes nothing and commits nothing
    again = run_dream(ws)
    assert again.git is None and _git(root, "rev-list", "--count", "HEAD").strip() == "2"
    # staged user changes: the dream writes its files but does not commit
    (root / "USER.md").write_text((root / "USER.md").read_text() + "\nLikes long walks.\n")
    _git(root, "add", "USER.md")
    fact = "Ben is allergic to peanuts; always check bakery labels."
    write_note(root, "2026-05-08", [fact])
    for day in days("2026-05-08", 3):
        recall(ws, day, fact, f"ben {day}", note_day="2026-05-08")
    monkeypatch.setenv("KIT_NOW", "2026-05-10T20:00:00+00:00")
    third = run_dream(ws)
    assert third.promoted and "MEMORY.md" in third.changed and third.git["committed"] is False
    assert "staged changes" in third.git["note"]
    assert _git(root, "rev-list", "--count", "HEAD").strip() == "2"
    assert _git(root, "diff", "--cached", "--name-only").split() == ["USER.md"]


def test_custom_diary_template(workspace, monkeypatch):
    monkeypatch.setenv("KIT_NOW", seed(workspace))
    (workspace.root / "templates" / "dream-diary.md.j2").write_text(
        "### {{ date }}: {{ promoted | length }} new\n{% for p in promoted %}* {{ p.text }}\n{% endfor %}")
    workspace.reload(["templates/dream-diary.md.j2"])  # overrides come from the snapshot, like every template
    run_dream(workspace)
    diary = (workspace.root / "DREAMS.md").read_text()
    assert diary.endswith(f"### 2026-05-07: 2 new\n* {FACTS[0]}\n* {FACTS[1]}\n")


def test_a_broken_diary_template_falls_back_to_the_builtin(workspace, monkeypatch):
    """The diary is written last, after MEMORY.md: a template error must not fail the dream."""
    monkeypatch.setenv("KIT_NOW", seed(workspace))
    (workspace.root / "templates" / "dream-diary.md.j2").write_text("## {{ date }}\n\n{{ no_such_field }}\n")
    workspace.reload(["templates/dream-diary.md.j2"])
    result = run_dream(workspace)
    assert len(result.promoted) == 2 and result.diary is True
    assert result.notes == ("diary: templates/dream-diary.md.j2:3: template error: 'no_such_field' is undefined; "
                            "used the built-in template",)
    assert "I kept returning to 2 things" in (workspace.root / "DREAMS.md").read_text()


def test_builtin_diary_entry(workspace, monkeypatch):
    monkeypatch.setenv("KIT_NOW", seed(workspace))
    run_dream(workspace)
    diary = (workspace.root / "DREAMS.md").read_text()
    entry = diary[diary.index("## 2026-05-07 20:00"):]
    assert entry.startswith("## 2026-05-07 20:00\n\nI kept returning to 2 things and wrote them into long-term memory:\n"
                            f"\n- {FACTS[0]}\n- {FACTS[1]}\n")
    assert "Light sleep looked at 2 recently recalled lines (2 for the first time)." in entry
    # the next night Light stages the same lines again: none for the first time (it said "2 new today")
    recall(workspace, "2026-05-08", FACTS[0], "question again", note_day="2026-05-01")
    monkeypatch.setenv("KIT_NOW", "2026-05-08T20:00:00+00:00")
    run_dream(workspace)
    diary = (workspace.root / "DREAMS.md").read_text()
    assert diary.endswith("Light sleep looked at 2 recently recalled lines (0 for the first time).\n")


def test_diary_lists_each_fact_once(workspace, monkeypatch):
    """REM's truths that Deep promoted the same night are not listed a second time."""
    monkeypatch.setenv("KIT_NOW", seed(workspace))
    result = run_dream(workspace)
    assert [t.cand.key for t in result.rem.truths] == ["memory/2026-05-01.md:3:3", "memory/2026-05-01.md:4:4"]
    diary = (workspace.root / "DREAMS.md").read_text()
    entry = diary[diary.index("## 2026-05-07 20:00"):]
    assert entry == ("## 2026-05-07 20:00\n\nI kept returning to 2 things and wrote them into long-term memory:\n"
                     f"\n- {FACTS[0]}\n- {FACTS[1]}\n\n"
                     "Threads running through the week: alice, dairy, drinks; deploys, happen, production.\n\n"
                     "Light sleep looked at 2 recently recalled lines (2 for the first time).\n")
    assert diary.count(FACTS[0]) == 1 and diary.count(FACTS[1]) == 1


def test_llm_diary_uses_the_configured_model(workspace, monkeypatch, tmp_path):
    script = tmp_path / "diary.yaml"
    script.write_text("record: seen.jsonl\nturns:\n  - text: \"Tonight I kept thinking about Alice's oat milk.\"\n")
    workspace.write_text("kit.yaml", f"agent:\n  model: 'script:{script}'\ndreaming:\n  diary: llm\n")
    monkeypatch.setenv("KIT_NOW", seed(workspace))
    result = run_dream(workspace)
    assert result.notes == ()
    diary = (workspace.root / "DREAMS.md").read_text()
    assert diary.endswith("## 2026-05-07 20:00\n\nTonight I kept thinking about Alice's oat milk.\n")
    seen = json.loads((tmp_path / "seen.jsonl").read_text().splitlines()[0])
    assert FACTS[0] in json.dumps(seen)


def test_llm_diary_failure_falls_back_to_template(workspace, monkeypatch, tmp_path):
    script = tmp_path / "diary.yaml"
    script.write_text("turns:\n  - error: {kind: rate_limit, message: simulated 429}\n")
    workspace.write_text("kit.yaml", f"agent:\n  model: 'script:{script}'\ndreaming:\n  diary: llm\n")
    monkeypatch.setenv("KIT_NOW", seed(workspace))
    result = run_dream(workspace)
    assert len(result.notes) == 1 and result.notes[0].startswith("diary: llm failed")
    assert "I kept returning to 2 things" in (workspace.root / "DREAMS.md").read_text()


def test_git_autocommit_respects_gitignore(tmp_path, monkeypatch):
    """Reports and diary ignored by the user: a promotion commits MEMORY.md alone (before, `git add`
    of an ignored report failed and the MEMORY.md change was never committed)."""
    from kit.init import init_workspace
    from kit.workspace import Workspace

    root = tmp_path / "gws"
    init_workspace(root, git=True)
    with open(root / ".gitignore", "a", encoding="utf-8") as fh:
        fh.write("\nmemory/dreaming/\nDREAMS.md\n")
    _git(root, "rm", "-q", "--cached", "DREAMS.md")  # tracked files are never ignored: untrack it first
    _git(root, "add", ".gitignore")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "ignore dream reports")
    ws = Workspace.open(root)
    monkeypatch.setenv("KIT_NOW", seed(ws))
    result = run_dream(ws)
    assert result.promoted and "memory/dreaming/light/2026-05-07.md" in result.changed
    assert result.git == {"committed": True, "note": "dream: promote 2 memories (2026-05-07)",
                          "commit": _git(root, "rev-parse", "HEAD").strip()}
    assert _git(root, "show", "--name-only", "--format=", "HEAD").split() == ["MEMORY.md"]
    assert _git(root, "status", "--porcelain") == "?? memory/2026-05-01.md\n"  # the seeded note is the user's


def test_quiet_nights_are_carried_into_the_next_memory_commit(tmp_path, monkeypatch):
    """No "promote 0 memories" commit per night: reports and diary of nights that did not change
    MEMORY.md join the commit of the next dream that does; the user's files never do."""
    from kit.init import init_workspace
    from kit.workspace import Workspace

    root = tmp_path / "gws"
    init_workspace(root, git=True)
    ws = Workspace.open(root)
    monkeypatch.setenv("KIT_NOW", seed(ws))
    assert run_dream(ws).git["committed"] is True  # 2026-05-07: two promotions
    count = int(_git(root, "rev-list", "--count", "HEAD"))
    fact = "Ben is allergic to peanuts; always check bakery labels."
    write_note(root, "2026-05-08", [fact])
    (root / "scratch.txt").write_text("the user's own file\n")
    for i, day in enumerate(days("2026-05-08", 3)):
        recall(ws, day, fact, f"ben question {i}", note_day="2026-05-08")
        monkeypatch.setenv("KIT_NOW", f"{day}T20:00:00+00:00")
        night = run_dream(ws)
        if day < "2026-05-10":
            assert night.promoted == () and f"memory/dreaming/light/{day}.md" in night.changed
            assert night.git == {"committed": False, "commit": None, "note": "memory unchanged; reports and "
                                 "diary wait for the next dream that changes MEMORY.md"}
            assert int(_git(root, "rev-list", "--count", "HEAD")) == count
    assert night.promoted == ("memory/2026-05-08.md:3:3",)
    assert night.git["committed"] is True
    assert _git(root, "log", "-1", "--format=%s").strip() == "dream: promote 1 memory (2026-05-10)"  # was "1 memories"
    assert int(_git(root, "rev-list", "--count", "HEAD")) == count + 1
    files = set(_git(root, "show", "--name-only", "--format=", "HEAD").split())
    assert {"MEMORY.md", "DREAMS.md", "memory/dreaming/light/2026-05-08.md", "memory/dreaming/light/2026-05-09.md",
            "memory/dreaming/light/2026-05-10.md"} <= files
    assert files <= {"MEMORY.md", "DREAMS.md"} | {f"memory/dreaming/{p}/{d}.md" for p in ("light", "rem", "deep")
                                                   for d in days("2026-05-08", 3)}
    assert _git(root, "status", "--porcelain", "--", "memory/dreaming", "DREAMS.md", "MEMORY.md") == ""
    assert "?? scratch.txt" in _git(root, "status", "--porcelain")


def test_text_output_prints_user_text_verbatim(workspace, cli):
    """Rich markup in a note ("[/srv/backup]", "[bold]") is text, not a MarkupError traceback."""
    fact = "Backups live in [/srv/backup] on the NAS, [bold] nightly."
    now = seed(workspace, facts=[fact, FACTS[0]])
    res = cli("memory", "explain", "backups", "-w", workspace.root, env={"KIT_NOW": now})
    assert res.exit_code == 0
    claim = claim_hash(f"- {fact}")
    assert res.stdout.splitlines()[:2] == [f"memory/2026-05-01.md:3:3 (claim {claim}, status candidate)",
                                           f"  - {fact}"]
    res = cli("dream", "-w", workspace.root, env={"KIT_NOW": now})
    [line] = [x for x in res.stdout.splitlines() if x.startswith("  + memory/2026-05-01.md:3:3  score ")]
    assert res.exit_code == 0 and line.endswith(f"  {fact}")  # the fact itself, its markup as text
    res = cli("memory", "promote", "-w", workspace.root, env={"KIT_NOW": now})
    assert res.exit_code == 0 and "memory/2026-05-01.md:3:3" in res.stdout


def test_autocommit_in_a_workspace_below_the_repository_root(tmp_path, monkeypatch):
    """Carried reports are named relative to the workspace even when .git is further up."""
    from kit.init import init_workspace
    from kit.workspace import Workspace

    repo = tmp_path / "repo"
    root = repo / "assistant"
    init_workspace(root)
    (root / "kit.yaml").write_text("git:\n  autocommit: true\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
    ws = Workspace.open(root)
    write_note(root, "2026-05-01", list(FACTS))
    recall(ws, "2026-05-04", FACTS[0], "one", note_day="2026-05-01")
    monkeypatch.setenv("KIT_NOW", "2026-05-04T20:00:00+00:00")
    assert run_dream(ws).git["committed"] is False  # quiet night: reports wait
    for i, day in enumerate(days("2026-05-05", 3)):
        recall(ws, day, FACTS[0], f"again {i}", note_day="2026-05-01")
    monkeypatch.setenv("KIT_NOW", "2026-05-07T20:00:00+00:00")
    night = run_dream(ws)
    assert night.promoted and night.git["committed"] is True, night.git
    files = _git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert "assistant/MEMORY.md" in files and "assistant/memory/dreaming/light/2026-05-04.md" in files


def test_human_output_gives_reasons_not_gate_names(workspace, cli):
    table = "| service | owner | |---|---| | api | Ada | | web | Bob |"
    now = seed(workspace, facts=[*FACTS, table])
    assert cli("dream", "-w", workspace.root, env={"KIT_NOW": now}).exit_code == 0
    mem = workspace.root / "MEMORY.md"
    lines = mem.read_text().splitlines()
    at = lines.index("- " + FACTS[1])
    mem.write_text("\n".join(lines[: at - 1] + lines[at + 1 :]) + "\n")  # the user removes the deploys entry

    res = cli("memory", "promote", "-w", workspace.root, env={"KIT_NOW": now})
    assert res.exit_code == 0, res.output
    rows = {line.split()[2]: line for line in res.output.splitlines()[1:4]}
    assert rows["memory/2026-05-01.md:3:3"].endswith("  blocked: already in MEMORY.md")
    assert rows["memory/2026-05-01.md:4:4"].endswith("  blocked: you removed it from MEMORY.md")
    assert rows["memory/2026-05-01.md:5:5"].endswith("  blocked: junk: looks like a table")
    assert "not_" not in res.output

    res = cli("memory", "explain", "memory/2026-05-01.md:5:5", "-w", workspace.root, env={"KIT_NOW": now})
    gates = [line for line in res.stdout.splitlines() if line.startswith(("  pass ", "  FAIL "))]
    data = json.loads(cli("memory", "explain", "memory/2026-05-01.md:5:5", "--json", "-w", workspace.root,
                          env={"KIT_NOW": now}).output)
    assert data["blocked_by"] == ["not_junk"] and data["gates"]["not_junk"]["value"] == "looks like a table"
    assert gates == [
        "  FAIL junk: looks like a table",
        f"  pass score high enough ({data['score']:.3f} vs min_score 0.750)",
        "  pass enough credited recalls (4 vs min_recall_count 3)",
        "  pass recalled on enough days (4 vs min_recall_days 2)",
        "  pass recalled by enough queries (4 vs min_unique_queries 2)",
        "  pass recalled lately (0 vs max_age_days 30)",
        "  pass not in MEMORY.md yet",
        "  pass not removed by you",
    ]

    report = (workspace.root / "memory/dreaming/deep/2026-05-07.md").read_text()
    assert "— | service | owner | |---|---| | api | Ada | | web | Bob | (blocked: junk: looks like a table)" in report


def test_explain_shows_credited_counts_as_the_credit_line_does():
    """A gate on credited recalls compared 1.463607 with 3 while the credit line said 1.46."""
    from kit.cli.promote_cmd import _num

    assert [_num(v, score=False) for v in (1.463607, 7.491332, 4.0, 3, 30)] == ["1.46", "7.49", "4", "3", "30"]
    assert _num(0.7512345, score=True) == "0.751"


def test_a_second_dream_the_same_day_says_nothing_is_new_not_that_gates_hold(workspace, cli):
    """It said "none passed the promotion gates yet" when every candidate was simply in MEMORY.md."""
    now = seed(workspace)
    first = cli("dream", "-w", workspace.root, env={"KIT_NOW": now}).stdout
    assert "  + memory/2026-05-01.md:3:3  score " in first
    again = cli("dream", "-w", workspace.root, env={"KIT_NOW": now}).stdout.splitlines()
    at = next(i for i, line in enumerate(again) if line.startswith("deep:  promoted 0; ranked "))
    assert again[at + 1] == "       nothing new: every candidate is already in MEMORY.md"
    assert "none passed" not in "\n".join(again)


def test_explain_takes_a_hit_as_search_prints_it(workspace, cli):
    """Search prints `path:3` (and `path:3-4`); explain wanted the key `path:3:3` and said no
    candidate matched."""
    now = seed(workspace)
    by_key = cli("memory", "explain", "memory/2026-05-01.md:3:3", "--json", "-w", workspace.root, env={"KIT_NOW": now})
    assert by_key.exit_code == 0
    claim = json.loads(by_key.stdout)["claim"]
    for target in ("memory/2026-05-01.md:3", "memory/2026-05-01.md:3-3"):
        found = cli("memory", "explain", target, "--json", "-w", workspace.root, env={"KIT_NOW": now})
        assert found.exit_code == 0, found.output
        assert json.loads(found.stdout)["claim"] == claim


def test_a_credited_count_a_hair_under_a_whole_number_prints_whole():
    """Regression (a new-user pass): r/q/d read "1.00/1/1" for a credit summing to 0.9999…; a
    fraction keeps two decimals."""
    from kit import count_text

    assert [count_text(v) for v in (0.1 + 0.2 + 0.7, 0.99999999, 4.25, 3, 2.0, 0.26)] == ["1", "1", "4.25", "3", "2", "0.26"]
