"""Changed facts (issue 16 item 4) and contradictions (issue 12 item 3): supersede, stale, to verify."""

from __future__ import annotations

import json
import re

import pytest

from helpers_dream import days, searched, set_now, write_note
from kit.dreaming import store
from kit.dreaming.explain import explain
from kit.dreaming.runner import run_dream

OLD = "Team standup is at 9:30 in the Kelvin room."
MOVED = "Standup moves to 10:00 from Monday, still in the Kelvin room."
TUESDAYS = "Production deploys happen on Tuesdays after standup."
THURSDAYS = "Production deploys happen on Thursdays after standup."
FILLER = ["Lunch at the Vietnamese place, the pho was great.", "Rain all day, took the tram."]


def recalled(ws, text: str, note_day: str, on: list[str], stem: str) -> None:
    for i, day in enumerate(on):
        searched(ws, day, f"{stem} {i}", [(text, 0.62), (FILLER[0], 0.3)], note_day=note_day)


def promote_first(ws, text: str) -> str:
    write_note(ws.root, "2026-05-01", [text, *FILLER])
    recalled(ws, text, "2026-05-01", days("2026-05-02", 3), "first")
    set_now("2026-05-04", 20)
    assert run_dream(ws).promoted == ("memory/2026-05-01.md:3:3",)
    return "memory/2026-05-01.md:3:3"


def archive(ws) -> str:
    return (ws.root / "memory/archive/promoted.md").read_text()


def test_a_line_that_states_the_change_supersedes_and_the_old_value_is_archived(workspace):
    old_key = promote_first(workspace, OLD)
    write_note(workspace.root, "2026-05-10", [MOVED, *FILLER])
    recalled(workspace, MOVED, "2026-05-10", days("2026-05-11", 3), "standup")
    set_now("2026-05-13", 20)
    result = run_dream(workspace)
    assert result.promoted == ("memory/2026-05-10.md:3:3",) and result.superseded == (old_key,)
    decision = next(d for d in result.decisions if d.action == "superseded")
    assert decision.detail == "replaces an older value: 09:30 → 10:00 (was: Team standup is at 9:30 in the Kelvin room.)"
    memory = (workspace.root / "MEMORY.md").read_text()
    assert MOVED in memory and OLD not in memory
    assert "supersedes=memory/2026-05-01.md:3:3" in memory
    assert re.search(r"<!-- kit:promoted key=memory/2026-05-01\.md:3:3 .* superseded_by=memory/2026-05-10\.md:3:3 "
                     r"superseded=2026-05-13 -->\n- Team standup is at 9:30 in the Kelvin room\.\n", archive(workspace))
    with workspace.open_state() as db:
        rows = {p.key: (p.status, p.note) for p in store.promotions(db)}
    assert rows == {old_key: ("superseded", "superseded by memory/2026-05-10.md:3:3"),
                    "memory/2026-05-10.md:3:3": ("active", f"supersedes {old_key}")}
    # the old value keeps being recalled: it is never promoted again
    recalled(workspace, OLD, "2026-05-01", days("2026-05-14", 3), "old standup")
    set_now("2026-05-16", 20)
    again = run_dream(workspace)
    assert again.promoted == () and OLD not in (workspace.root / "MEMORY.md").read_text()
    report = (workspace.root / "memory/dreaming/deep/2026-05-13.md").read_text()
    assert "## Superseded by a newer value" in report


def test_a_newer_note_with_another_value_supersedes_and_dedupe_never_blocks_it(workspace):
    old_key = promote_first(workspace, TUESDAYS)
    write_note(workspace.root, "2026-05-10", [THURSDAYS, *FILLER])
    recalled(workspace, THURSDAYS, "2026-05-10", days("2026-05-11", 3), "deploy day")
    set_now("2026-05-13", 20)
    result = run_dream(workspace)
    # cosine(Tuesdays, Thursdays) is above the 0.88 dedupe line: before, the new value was a "duplicate"
    assert [d.action for d in result.decisions] == ["superseded"]
    assert result.superseded == (old_key,)
    memory = (workspace.root / "MEMORY.md").read_text()
    assert THURSDAYS in memory and TUESDAYS not in memory
    assert f"- {TUESDAYS}" in archive(workspace)


def test_an_update_of_a_promoted_fact_needs_only_one_credited_recall(workspace):
    old_key = promote_first(workspace, OLD)
    write_note(workspace.root, "2026-05-10", [MOVED, *FILLER])
    recalled(workspace, MOVED, "2026-05-10", ["2026-05-11"], "standup")
    set_now("2026-05-11", 20)
    result = run_dream(workspace)
    assert result.superseded == (old_key,) and result.promoted == ("memory/2026-05-10.md:3:3",)
    d = next(d for d in result.decisions if d.action == "superseded")
    assert d.ranked.blocked_by == ["min_score", "min_recall_count", "min_recall_days", "min_unique_queries"]
    assert d.detail.endswith("; an update of a promoted fact needs one credited recall")


def a_line_with_a_newer_value(ws, old: str, newer: str) -> None:
    """`old` in a note of 2026-05-01, recalled on three days; `newer` in a note of 2026-05-03, never
    recalled; the clock on 2026-05-06."""
    write_note(ws.root, "2026-05-01", [old, *FILLER])
    write_note(ws.root, "2026-05-03", [newer])
    recalled(ws, old, "2026-05-01", days("2026-05-04", 3), "when is it")
    set_now("2026-05-06", 20)


# the second pair (a regression found by a new-user pass, with the claims module's own example):
# "Standup is at 9:30" and "Standup moves to 10:00" share no word but "standup", and the newer line
# needed two shared words to be compared, so the old time was promoted while the notes said it moved
@pytest.mark.parametrize(("old", "newer"), [(TUESDAYS, THURSDAYS), ("Standup is at 9:30", "Standup moves to 10:00")])
def test_a_stale_value_whose_newer_value_is_in_the_notes_is_never_promoted(workspace, old, newer):
    a_line_with_a_newer_value(workspace, old, newer)
    result = run_dream(workspace)
    assert result.promoted == ()
    (d,) = result.decisions
    assert (d.action, d.detail) == ("stale", f"a newer value is in memory/2026-05-03.md: {newer}")
    assert old not in (workspace.root / "MEMORY.md").read_text()


def test_a_note_linked_from_outside_the_workspace_is_no_newer_value(workspace, tmp_path):
    """Deep reads the notes inside the workspace only (as the index does): a newer value in a note
    that is a link to a file elsewhere is not read, so it makes the older line neither stale nor
    anything else — the night decides as if that note were not there."""
    a_line_with_a_newer_value(workspace, TUESDAYS, THURSDAYS)
    newer = workspace.root / "memory/2026-05-03.md"
    outside = tmp_path / "elsewhere.md"
    outside.write_text(newer.read_text(encoding="utf-8"), encoding="utf-8")
    newer.unlink()
    newer.symlink_to(outside)
    (d,) = run_dream(workspace, dry_run=True).decisions
    assert (d.action, d.detail) == ("promoted", "passed every gate")
    newer.unlink()
    newer.write_text(outside.read_text(encoding="utf-8"), encoding="utf-8")  # the same note, inside
    (d,) = run_dream(workspace, dry_run=True).decisions
    assert d.action == "stale"


def test_kit_dream_lists_what_passed_the_gates_and_deep_held_back(workspace, cli):
    """Regression (a new-user pass): a night whose one passing candidate was stale said "none passed
    the promotion gates yet" — it had passed them; Deep held it back, and said why only in --json."""
    a_line_with_a_newer_value(workspace, TUESDAYS, THURSDAYS)
    lines = cli("dream", "-w", workspace.root).stdout.splitlines()
    at = lines.index("deep:  promoted 0; ranked 2 candidates")
    assert lines[at + 1:at + 3] == [f"  · memory/2026-05-01.md:3:3  stale  {TUESDAYS}",
                                    f"    a newer value is in memory/2026-05-03.md: {THURSDAYS}"]
    assert not any("none passed" in line for line in lines)


LIMIT = "over today's limit of 1 promotion, set by dreaming.deep.limit"


def test_kit_dream_lists_the_strongest_held_back_candidates_and_counts_the_rest(workspace, cli):
    """A nightly cron mail listed every candidate Deep held back: on a busy log, 600 of them (1,200
    lines) around ten promotions. `--limit N` lists N in rank order; the rest are counted by why."""
    alice = "Alice takes oat milk in her flat white."
    write_note(workspace.root, "2026-05-01", [TUESDAYS, OLD, alice, *FILLER])
    write_note(workspace.root, "2026-05-03", [THURSDAYS])
    # the stale line is recalled most, so it ranks first and Deep weighs it before the limit is reached
    for stem, text, n in (("deploy day", TUESDAYS, 4), ("standup time", OLD, 3), ("coffee order", alice, 3)):
        recalled(workspace, text, "2026-05-01", days("2026-05-02", n), stem)
    workspace.write_text("kit.yaml", "dreaming:\n  deep:\n    limit: 1\n")
    env = {"KIT_NOW": "2026-05-06T20:00:00+00:00"}
    set_now("2026-05-06", 20)
    assert [d.action for d in run_dream(workspace, dry_run=True).decisions] == ["stale", "promoted", "over_limit"]

    def deep_lines(*args):
        lines = cli("dream", "--dry-run", "-w", workspace.root, *args, env=env).output.splitlines()
        at = lines.index("deep:  would promote 1; ranked 4 candidates")
        assert lines[at + 1] == f"  + memory/2026-05-01.md:5:5  score 0.828  {alice}"
        return lines[at + 2:]

    stale = [f"  · memory/2026-05-01.md:3:3  stale  {TUESDAYS}", f"    a newer value is in memory/2026-05-03.md: {THURSDAYS}"]
    over = [f"  · memory/2026-05-01.md:4:4  over today's limit  {OLD}", f"    {LIMIT}"]
    assert deep_lines() == stale + over
    hint = "`kit dream --dry-run --limit 2` lists all 2"
    assert deep_lines("--limit", "1") == [*stale, f"  … 1 more held back (over today's limit); {hint}"]
    assert deep_lines("--limit", "0") == [f"  … 2 held back (1 over today's limit, 1 stale); {hint}"]
    # an applied night (a cron job's log) points to its Deep report, never to a command that would
    # dream again; the report lists what Deep held back, each with why, in rank order
    lines = cli("dream", "-w", workspace.root, "--limit", "1", env=env).output.splitlines()
    at = lines.index("deep:  promoted 1; ranked 4 candidates")
    assert lines[at + 2:at + 5] == [*stale, "  … 1 more held back (over today's limit); more in "
                                            "memory/dreaming/deep/2026-05-06.md"]
    report = (workspace.root / "memory/dreaming/deep/2026-05-06.md").read_text().split("\n")
    at = report.index("## Held back by Deep (2)")
    assert [line.split(" score ")[0] for line in report[at + 2:at + 4]] == ["- `memory/2026-05-01.md:3:3`",
                                                                          "- `memory/2026-05-01.md:4:4`"]
    assert report[at + 2].endswith(f"(stale: a newer value is in memory/2026-05-03.md: {THURSDAYS})")
    assert report[at + 3].endswith(f"({LIMIT})") and report[at + 4] == ""
    # a second dream the same day: the setting, and what used it, not "a limit of 0"
    again = cli("dream", "--dry-run", "-w", workspace.root, env=env).output.splitlines()
    assert f"    {LIMIT}; 1 promoted earlier today" in again


def test_kit_dream_shows_a_superseding_promotion_and_what_it_replaced(workspace, cli):
    """Regression (a new-user pass): a night that replaced a value printed "promoted 1" and no line
    for the promotion (only "promoted" decisions were listed)."""
    promote_first(workspace, OLD)
    write_note(workspace.root, "2026-05-10", [MOVED, *FILLER])
    recalled(workspace, MOVED, "2026-05-10", days("2026-05-11", 3), "standup")
    res = cli("dream", "-w", workspace.root, env={"KIT_NOW": "2026-05-13T20:00:00+00:00"})
    lines = res.output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  + memory/2026-05-10.md:3:3  score "))
    assert lines[at].endswith(f"  {MOVED}")
    assert lines[at + 1] == f"    replaces an older value: 09:30 → 10:00 (was: {OLD})"


def test_over_the_limit_reads_as_words_in_promote_and_explain(workspace, cli):
    """Regression (a new-user pass): `kit memory promote` printed the raw name `over_limit`, and
    explain "over limit (over today's limit of 1 promotions)"."""
    write_note(workspace.root, "2026-05-01", [TUESDAYS, OLD, *FILLER])
    recalled(workspace, TUESDAYS, "2026-05-01", days("2026-05-02", 3), "deploy day")
    recalled(workspace, OLD, "2026-05-01", days("2026-05-02", 3), "standup time")
    workspace.write_text("kit.yaml", "dreaming:\n  deep:\n    limit: 1\n")
    env = {"KIT_NOW": "2026-05-04T20:00:00+00:00"}
    res = cli("memory", "promote", "-w", workspace.root, env=env)
    statuses = sorted(line.rsplit("  ", 1)[1] for line in res.output.splitlines()[1:3])
    assert statuses == ["over today's limit", "would promote"]
    over = next(line.split()[2] for line in res.output.splitlines()[1:3] if line.endswith("over today's limit"))
    res = cli("memory", "explain", over, "-w", workspace.root, env=env)
    assert f"tonight's Deep: {LIMIT}" in res.output.splitlines()


def test_kit_memory_promote_says_when_its_rows_stop_at_the_limit(workspace, cli):
    """Regression (a new-user pass): `kit memory promote` showed its first --limit rows and nothing
    after them, so a cut list read as every candidate there is."""
    a_line_with_a_newer_value(workspace, TUESDAYS, THURSDAYS)
    env = {"KIT_NOW": "2026-05-06T20:00:00+00:00"}
    lines = cli("memory", "promote", "-w", workspace.root, "--limit", "1", env=env).output.splitlines()
    assert len(lines) == 6 and lines[2] == "… 1 more candidate; --limit 2 shows all 2"
    lines = cli("memory", "promote", "-w", workspace.root, env=env).output.splitlines()
    assert len(lines) == 6 and not any(line.startswith("…") for line in lines)
    lines = cli("memory", "promote", "-w", workspace.root, "--limit", "0", env=env).output.splitlines()
    assert lines[0] == "… 2 candidates; --limit 2 shows all 2"  # no header over no rows, nothing "more"


def test_explain_says_what_tonights_deep_does_with_a_candidate_that_passed_every_gate(workspace, cli):
    """Regression (a new-user pass): explain listed every gate as passed for a stale line and never
    said why it was not promoted; it now gives tonight's Deep decision — and nothing is written."""
    a_line_with_a_newer_value(workspace, TUESDAYS, THURSDAYS)
    before = sorted(p.name for p in (workspace.root / "memory").rglob("*"))
    why = explain(workspace, "memory/2026-05-01.md:3:3")
    assert why.passed and why.tonight is not None
    assert (why.tonight.action, why.tonight.detail) == ("stale", f"a newer value is in memory/2026-05-03.md: {THURSDAYS}")
    assert why.to_json()["tonight"] == {"action": "stale", "detail": why.tonight.detail}
    res = cli("memory", "explain", "memory/2026-05-01.md:3:3", "-w", workspace.root)
    assert f"tonight's Deep: stale (a newer value is in memory/2026-05-03.md: {THURSDAYS})" in res.output.splitlines()
    assert explain(workspace, FILLER[0]).tonight is None  # blocked by its gates: Deep never weighs it
    assert sorted(p.name for p in (workspace.root / "memory").rglob("*")) == before  # no report, no diary


def test_explain_by_text_says_which_other_candidates_the_text_matched(workspace, cli):
    """Regression (a new-user pass): `kit memory explain "Standup"` explained one of four candidates
    with that word and gave no hint that the others matched."""
    write_note(workspace.root, "2026-05-01", [TUESDAYS, OLD, *FILLER])
    recalled(workspace, TUESDAYS, "2026-05-01", days("2026-05-02", 3), "deploy day")
    recalled(workspace, OLD, "2026-05-01", days("2026-05-02", 2), "standup time")
    set_now("2026-05-04", 20)
    why = explain(workspace, "standup")
    assert why.cand.snippet == f"- {TUESDAYS}"  # the most recalled
    assert [(o.key, o.snippet) for o in why.also] == [("memory/2026-05-01.md:4:4", f"- {OLD}")]
    assert why.to_json()["also_matched"] == [{"key": "memory/2026-05-01.md:4:4", "snippet": f"- {OLD}"}]
    lines = cli("memory", "explain", "standup", "-w", workspace.root).stdout.splitlines()
    assert lines[2:4] == ["also matched 1 other candidate (explain one by its key):",
                          f"  memory/2026-05-01.md:4:4  {OLD}"]
    assert explain(workspace, "memory/2026-05-01.md:3:3").also == ()  # a key names one


def test_the_user_moved_city_goes_to_verify_and_accept_retires_the_old_line(workspace, cli):
    mem = workspace.root / "MEMORY.md"
    mem.write_text(mem.read_text() + "\n- I live in Porto, near the Bolhão market.\n")
    write_note(workspace.root, "2026-05-01", ["I live in Lisbon now, near the Gulbenkian.", *FILLER])
    recalled(workspace, "I live in Lisbon now, near the Gulbenkian.", "2026-05-01", days("2026-05-02", 3), "where")
    set_now("2026-05-04", 20)
    before = mem.read_text()
    result = run_dream(workspace)
    assert result.promoted == () and mem.read_text() == before  # not a second, contradicting promotion
    (item,) = result.to_verify
    assert (item.id, item.key, item.text, item.old_key, item.status) == (
        1, "memory/2026-05-01.md:3:3", "I live in Lisbon now, near the Gulbenkian.", "", "pending")
    assert item.old_text == "I live in Porto, near the Bolhão market."
    assert item.reason == ("contradicts a line of yours in MEMORY.md: bolhão, porto → gulbenkian, lisbon (was: I live in Porto, "
                           "near the Bolhão market.)")
    diary = (workspace.root / "DREAMS.md").read_text()
    assert "### To verify" in diary and "- #1 I live in Lisbon now, near the Gulbenkian. (MEMORY.md says: I live in " \
        "Porto, near the Bolhão market.)" in diary
    listed = json.loads(cli("memory", "verify", "--json", "-w", workspace.root).output)
    assert [v["id"] for v in listed["items"]] == [1]
    text = cli("memory", "verify", "-w", workspace.root).output
    assert "#1  2026-05-04  memory/2026-05-01.md:3:3  (pending)" in text and "a line of yours in MEMORY.md" in text
    assert explain(workspace, "I live in Lisbon now").status == "to_verify"
    # the next night does not queue it twice, nor promote it
    recalled(workspace, "I live in Lisbon now, near the Gulbenkian.", "2026-05-01", ["2026-05-05"], "again")
    set_now("2026-05-05", 20)
    assert run_dream(workspace).to_verify == () and mem.read_text() == before

    res = cli("memory", "verify", "accept", "1", "-w", workspace.root, env={"KIT_NOW": "2026-05-06T09:00:00+00:00"})
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [
        "accepted #1: MEMORY.md now says: I live in Lisbon now, near the Gulbenkian.",
        "  retired to memory/archive/promoted.md: I live in Porto, near the Bolhão market."]
    memory = mem.read_text()
    assert "Porto" not in memory
    assert re.search(r"<!-- kit:promoted key=memory/2026-05-01\.md:3:3 claim=\w{12} .* verified=2026-05-06 -->\n"
                     r"- I live in Lisbon now, near the Gulbenkian\.\n", memory)
    assert re.search(r"source=MEMORY\.md verified=2026-05-06 superseded_by=memory/2026-05-01\.md:3:3 "
                     r"superseded=2026-05-06 -->\n- I live in Porto, near the Bolhão market\.", archive(workspace))
    assert explain(workspace, "I live in Lisbon now").status == "active"
    again = cli("memory", "verify", "accept", "1", "-w", workspace.root)
    assert again.exit_code == 1 and "#1 was already accepted on 2026-05-06" in again.stderr


def test_kit_dream_says_when_it_queued_a_contradiction_and_where_to_review_it(workspace, cli):
    # a new user's `kit dream` printed "promoted 0" and nothing else: the queued item went unseen
    mem = workspace.root / "MEMORY.md"
    mem.write_text(mem.read_text() + "\n- I live in Porto, near the Bolhão market.\n")
    write_note(workspace.root, "2026-05-01", ["I live in Lisbon now, near the Gulbenkian.", *FILLER])
    recalled(workspace, "I live in Lisbon now, near the Gulbenkian.", "2026-05-01", days("2026-05-02", 3), "where")
    set_now("2026-05-04", 20)
    dry = json.loads(cli("dream", "--dry-run", "--json", "-w", workspace.root).stdout)["deep"]
    assert (dry["to_verify_count"], dry["review"]) == (1, "kit memory verify")
    assert [v["text"] for v in dry["to_verify"]] == ["I live in Lisbon now, near the Gulbenkian."]
    # a dry run queues nothing: it does not send the reader to an empty queue
    preview = cli("dream", "--dry-run", "-w", workspace.root).stdout.splitlines()
    assert "to verify: 1 contradiction with MEMORY.md would be queued for `kit memory verify` by a dream" in preview
    lines = cli("dream", "-w", workspace.root).stdout.splitlines()
    assert "to verify: 1 contradiction with MEMORY.md queued; review with `kit memory verify`" in lines
    # waiting for the person is not held back: no `·` line, no held-back count, not in that report section
    assert [line for line in lines + preview if line.startswith(("  · ", "  … "))] == []
    report = (workspace.root / "memory/dreaming/deep/2026-05-04.md").read_text()
    assert "## Held back by Deep" not in report
    set_now("2026-05-05", 20)  # already waiting: not queued again, so not announced again
    again = cli("dream", "--json", "-w", workspace.root).stdout
    assert (json.loads(again)["deep"]["to_verify_count"], json.loads(again)["deep"]["review"]) == (0, None)


def test_a_changed_deploy_day_against_your_own_line_is_rejected_and_stays_out(workspace, cli):
    mem = workspace.root / "MEMORY.md"
    mem.write_text(mem.read_text() + "\n- Production deploys are on Tuesdays.\n")
    write_note(workspace.root, "2026-05-01", [THURSDAYS, *FILLER])
    recalled(workspace, THURSDAYS, "2026-05-01", days("2026-05-02", 3), "deploy day")
    set_now("2026-05-04", 20)
    (item,) = run_dream(workspace).to_verify
    assert item.reason.startswith("contradicts a line of yours in MEMORY.md: tuesday → thursday")
    before = mem.read_text()
    # the workspace may also be given before the subcommand
    out = json.loads(cli("memory", "verify", "-w", workspace.root, "reject", str(item.id), "--json",
                         env={"KIT_NOW": "2026-05-05T09:00:00+00:00"}).output)
    assert (out["action"], out["item"]["status"], out["changed"], out["archived"]) == ("rejected", "rejected", [],
                                                                                       None)
    assert mem.read_text() == before
    recalled(workspace, THURSDAYS, "2026-05-01", days("2026-05-06", 3), "deploy again")
    set_now("2026-05-08", 20)
    later = run_dream(workspace)
    assert later.promoted == () and later.to_verify == () and mem.read_text() == before
    shown = explain(workspace, THURSDAYS)
    assert shown.status == "rejected" and shown.blocked_by == ["not_demoted"]
    assert shown.to_json()["verify"]["status"] == "rejected"


def test_a_same_day_contradiction_of_a_promoted_entry_is_verified_and_accept_supersedes(workspace):
    from kit.dreaming import verify

    old_key = promote_first(workspace, OLD)
    write_note(workspace.root, "2026-05-01-standup", ["Team standup is at 10:15 in the Kelvin room.", *FILLER])
    recalled(workspace, "Team standup is at 10:15 in the Kelvin room.", "2026-05-01-standup",
             days("2026-05-05", 3), "standup")
    set_now("2026-05-07", 20)
    (item,) = run_dream(workspace).to_verify
    assert item.old_key == old_key
    assert item.reason == ("contradicts MEMORY.md and both notes are from the same day: 09:30 → 10:15 (was: Team "
                           "standup is at 9:30 in the Kelvin room.)")
    set_now("2026-05-08", 9)
    outcome = verify.accept(workspace, item.id)
    assert outcome.archived == OLD and outcome.changed == ("MEMORY.md", "memory/archive/promoted.md")
    memory = (workspace.root / "MEMORY.md").read_text()
    assert "10:15" in memory and OLD not in memory
    assert f"superseded_by={item.key}" in archive(workspace)
    with workspace.open_state() as db:
        assert {p.key: p.status for p in store.promotions(db)} == {old_key: "superseded", item.key: "active"}


def test_a_night_that_promotes_nothing_says_where_the_gates_are_read(workspace, cli):
    # a new user's first `kit dream` said "promoted 0; ranked 1 candidate" and nothing more
    write_note(workspace.root, "2026-05-01", [TUESDAYS, *FILLER])
    recalled(workspace, TUESDAYS, "2026-05-01", ["2026-05-02"], "deploy day")
    set_now("2026-05-02", 20)
    lines = cli("dream", "-w", workspace.root).stdout.splitlines()
    at = lines.index("deep:  promoted 0; ranked 2 candidates")  # the fact and the side hit
    assert lines[at + 1] == ("       none passed the promotion gates yet; `kit memory promote` shows which gate "
                             "holds each back")
    explained = cli("memory", "explain", TUESDAYS, "-w", workspace.root).stdout
    assert "1 credited query, 1 credited day," in explained and "signals: 1 recall, 1 query, 1 day" in explained


GYM = "The clinic gym is open until 22:00 on weekdays."
HOLIDAYS = "The clinic gym is open until 20:00 on weekdays during the school holidays."


def _gym_hours_queued(workspace):
    """Your line of the gym's term-time hours in MEMORY.md, a note of its holiday hours recalled on
    three days, and the night that queues the pair: (MEMORY.md's path, the to-verify item)."""
    mem = workspace.root / "MEMORY.md"
    mem.write_text(mem.read_text() + f"\n- {GYM}\n")
    write_note(workspace.root, "2026-05-01", [HOLIDAYS, *FILLER])
    recalled(workspace, HOLIDAYS, "2026-05-01", days("2026-05-02", 3), "gym hours")
    set_now("2026-05-04", 20)
    (item,) = run_dream(workspace).to_verify
    return mem, item


def test_keep_both_keeps_your_line_never_queues_the_pair_again_and_the_next_dream_promotes_it(workspace, cli):
    # two true lines (term-time and holiday hours): neither accept (drops your line) nor reject
    # (drops the new one) is the answer
    mem, item = _gym_hours_queued(workspace)
    assert item.reason.startswith("contradicts a line of yours in MEMORY.md: 22:00 → 20:00")
    before = mem.read_text()
    out = cli("memory", "verify", "keep-both", str(item.id), "--json", "-w", workspace.root,
              env={"KIT_NOW": "2026-05-05T09:00:00+00:00"})
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert (data["action"], data["item"]["status"], data["item"]["status_day"], data["changed"], data["archived"],
            data["git"]) == ("kept_both", "kept_both", "2026-05-05", [], None, None)
    assert mem.read_text() == before  # nothing written yet: the dream promotes it, through the gates
    assert explain(workspace, HOLIDAYS).status is None  # a candidate again, not to_verify nor rejected
    assert json.loads(cli("memory", "verify", "--json", "-w", workspace.root).output) == {"items": []}
    set_now("2026-05-05", 20)
    night = run_dream(workspace)
    assert (night.promoted, night.to_verify, night.superseded) == (("memory/2026-05-01.md:3:3",), (), ())
    memory = mem.read_text()
    assert f"- {GYM}\n" in memory and f"- {HOLIDAYS}\n" in memory
    assert explain(workspace, HOLIDAYS).status == "active"
    # more recalls, more nights: never queued again, your line stays
    recalled(workspace, HOLIDAYS, "2026-05-01", days("2026-05-06", 2), "gym again")
    set_now("2026-05-07", 20)
    later = run_dream(workspace)
    assert later.to_verify == () and mem.read_text() == memory
    with workspace.open_state() as db:
        assert [(v.id, v.status) for v in store.verify_items(db)] == [(item.id, "kept_both")]
    again = cli("memory", "verify", "keep-both", str(item.id), "-w", workspace.root)
    assert again.exit_code == 1 and f"#{item.id} was already kept_both on 2026-05-05" in again.stderr


def test_keep_both_through_the_api_beside_a_promoted_entry(workspace):
    old_key = promote_first(workspace, OLD)
    other = "Team standup is at 10:15 in the Kelvin room."
    write_note(workspace.root, "2026-05-01-standup", [other, *FILLER])
    recalled(workspace, other, "2026-05-01-standup", days("2026-05-05", 3), "standup")
    set_now("2026-05-07", 20)
    (item,) = run_dream(workspace).to_verify
    assert item.old_key == old_key
    set_now("2026-05-08", 9)
    outcome = workspace.verify("keep-both", item.id)
    assert (outcome.action, outcome.item.status, outcome.changed, outcome.archived) == ("kept_both", "kept_both", (),
                                                                                         None)
    set_now("2026-05-08", 20)
    night = run_dream(workspace)
    assert (night.promoted, night.superseded, night.to_verify) == (("memory/2026-05-01-standup.md:3:3",), (), ())
    memory = (workspace.root / "MEMORY.md").read_text()
    assert OLD in memory and other in memory  # both kept; the old entry is not superseded
    with workspace.open_state() as db:
        assert {p.key: p.status for p in store.promotions(db)} == {old_key: "active", item.key: "active"}


def test_keep_both_in_words_and_the_verify_list_names_it(workspace, cli):
    mem, item = _gym_hours_queued(workspace)
    assert "keep-both N: both are true, two facts" in cli("memory", "verify", "-w", workspace.root).output
    res = cli("memory", "verify", "keep-both", str(item.id), "-w", workspace.root,
              env={"KIT_NOW": "2026-05-05T09:00:00+00:00"})
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [
        f"kept both #{item.id}: MEMORY.md keeps: {GYM}; the new text is a candidate again and a dream promotes it "
        "when it passes the gates"]
    listed = json.loads(cli("memory", "verify", "--all", "--json", "-w", workspace.root).output)
    assert [(v["id"], v["status"]) for v in listed["items"]] == [(item.id, "kept_both")]
    try:
        workspace.verify("both", item.id)
    except ValueError as e:
        assert str(e) == "verify action must be accept, reject or keep-both, not 'both'"
    else:
        raise AssertionError("an unknown verify action must be refused")


# A new user's repro (through the CLI, as they typed it): the cluster moved, id and city with it.
# Before, relation() read "prod-eu-1 → prod-eu-2" as another thing (only an id differs, names
# aside) and the new value was promoted beside the user's old line: MEMORY.md held both values.
CLUSTER_OLD = "Our production cluster is prod-eu-1 in Frankfurt."
CLUSTER_NEW = "Our production cluster is prod-eu-2 in Paris."


def test_a_changed_id_and_place_against_a_line_of_yours_goes_to_verify(tmp_path, cli):
    root = tmp_path / "ws"
    assert cli("init", root, "--git").exit_code == 0
    mem = root / "MEMORY.md"
    mem.write_text(mem.read_text() + f"- {CLUSTER_OLD}\n")
    assert cli("memory", "write", CLUSTER_NEW, "-w", root, env={"KIT_NOW": "2026-11-27T10:00"}).exit_code == 0
    for day in (27, 28, 29):
        for at, query in (("12:00", "which production cluster do we use"), ("12:30", "where is the prod cluster located")):
            res = cli("memory", "search", query, "--record", "-w", root, env={"KIT_NOW": f"2026-11-{day}T{at}"})
            assert res.exit_code == 0
    before = mem.read_text()
    dream = json.loads(cli("dream", "--json", "-w", root, env={"KIT_NOW": "2026-11-30T02:00"}).output)
    assert dream["deep"]["promoted"] == [] and mem.read_text() == before
    (item,) = json.loads(cli("memory", "verify", "--json", "-w", root).output)["items"]
    assert (item["text"], item["old_text"], item["status"]) == (CLUSTER_NEW, CLUSTER_OLD, "pending")
    assert item["reason"] == (f"contradicts a line of yours in MEMORY.md: prod-eu-1 → prod-eu-2; frankfurt → paris "
                              f"(was: {CLUSTER_OLD})")


def test_a_line_that_states_the_move_supersedes_a_promoted_id_and_place(workspace):
    old_key = promote_first(workspace, CLUSTER_OLD)
    moved = "We moved the production cluster to prod-eu-2 in Paris."
    write_note(workspace.root, "2026-05-10", [moved, *FILLER])
    recalled(workspace, moved, "2026-05-10", days("2026-05-11", 3), "prod cluster")
    set_now("2026-05-13", 20)
    result = run_dream(workspace)
    assert result.promoted == ("memory/2026-05-10.md:3:3",) and result.superseded == (old_key,)
    memory = (workspace.root / "MEMORY.md").read_text()
    assert moved in memory and CLUSTER_OLD not in memory and f"- {CLUSTER_OLD}" in archive(workspace)


def test_a_newer_id_and_place_without_a_stated_change_is_queued_not_superseded(workspace):
    # "prod-eu-2 in Paris" may be the moved cluster or a second one: a promoted entry is not replaced unasked
    old_key = promote_first(workspace, CLUSTER_OLD)
    write_note(workspace.root, "2026-05-10", [CLUSTER_NEW, *FILLER])
    recalled(workspace, CLUSTER_NEW, "2026-05-10", days("2026-05-11", 3), "prod cluster")
    set_now("2026-05-13", 20)
    result = run_dream(workspace)
    assert (result.promoted, result.superseded) == ((), ())
    (item,) = result.to_verify
    assert (item.text, item.old_key) == (CLUSTER_NEW, old_key)
    assert CLUSTER_OLD in (workspace.root / "MEMORY.md").read_text()


def _random_notes(root, rng) -> list[tuple[str, object]]:
    from datetime import date

    subjects = ["team standup", "production deploys", "the billing run", "the Kelvin room", "the design review",
                "the staging database", "Ada's flight", "the office", "the on-call rota", "the release train"]
    verbs = ["is at", "happens on", "moves to", "is now at", "is no longer at", "starts at", "was changed to",
             "needs", "is booked for", "happens after"]
    values = ["9:30", "10:00", "Tuesdays", "Thursdays", "14:00", "ticket #12", "ticket #13", "March 3",
              "the Kelvin room", "the Lisbon office", "port 5433", "two reviewers"]
    extras = ["", " after standup", " every week", " from Monday", " in the Kelvin room", " with Ben"]
    texts = []
    for day in range(1, 21):
        lines = [f"{rng.choice(subjects).capitalize()} {rng.choice(verbs)} {rng.choice(values)}{rng.choice(extras)}."
                 for _ in range(rng.randint(4, 9))]
        write_note(root, f"2026-05-{day:02d}", lines)
        texts += [(line, date(2026, 5, day)) for line in lines]
    return texts


def test_newer_lines_finds_what_comparing_every_note_line_finds(workspace):
    """Deep looks for the newer lines that clearly update a text by subject word (the rarest
    first, Jaccard's bound on what must be shared, the lines that say they changed): it must find
    exactly what comparing the text with every newer note line sharing two words (one, for a
    one-word subject: `deep.shared`) finds."""
    import random

    from kit.dreaming import deep

    texts = _random_notes(workspace.root, random.Random(5))

    def every_line(self, subject, words, day):
        if self._lines is None:
            self._lines = self._read()
        return [line for line in self._lines if line.day > day and len(words & line.words) >= deep.shared(subject)]

    found_any = 0
    for text, day in texts:
        fast, slow = deep.NoteLines(workspace.root), deep.NoteLines(workspace.root)
        slow.clear_candidates = every_line.__get__(slow)
        got = [(line.path, line.text) for line in deep.newer_lines(text, day, fast)]
        assert got == [(line.path, line.text) for line in deep.newer_lines(text, day, slow)]
        found_any += bool(got)
    assert found_any > 30  # the notes state changes: most texts have a newer value somewhere
