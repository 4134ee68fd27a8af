"""Sessions: JSONL transcripts, the state.db index (key → id, title, timestamps, tokens),
FTS5 search with unicode61 words and trigram CJK, and `kit sessions list|show|search --json`."""

from __future__ import annotations

import json

import pytest

from kit.agent.sessions import SNIPPET_CHARS, SessionStore
from kit.errors import NotFoundError
from kit.providers.base import Usage


@pytest.fixture
def store(workspace, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    return SessionStore(workspace)


def _talk(store, key, pairs):
    info = store.create(key)
    for user, reply in pairs:
        store.append(info.id, {"role": "user", "content": user})
        store.append(info.id, {"role": "assistant", "content": reply}, usage=Usage(100, 20))
    return info


def test_transcript_lines_and_index(store, workspace):
    info = _talk(store, "main", [("Where is the deploy checklist?", "In memory/2026-05-05.md.")])
    path = workspace.kit_dir / "sessions" / f"{info.id}.jsonl"
    lines = [json.loads(raw) for raw in path.read_text().splitlines()]
    assert lines == [
        {"kind": "session:start", "ts": "2026-05-07T09:00:00+00:00", "key": "main"},  # what the index needs
        {"seq": 1, "ts": "2026-05-07T09:00:00+00:00", "role": "user", "content": "Where is the deploy checklist?"},
        {"seq": 2, "ts": "2026-05-07T09:00:00+00:00", "role": "assistant", "content": "In memory/2026-05-05.md.",
         "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                   "cache_read_tokens": 0, "cache_write_tokens": 0}},
    ]
    got = store.get(info.id)
    assert (got.key, got.title, got.messages, got.prompt_tokens, got.completion_tokens) == (
        "main", "Where is the deploy checklist?", 2, 100, 20)
    assert store.current("main").id == info.id
    assert store.get("main").id == info.id  # a key resolves to its current session
    assert store.get(info.id[:12]).id == info.id  # unique prefix


def test_end_rotates_the_key(store):
    first = _talk(store, "main", [("one", "1")])
    store.end(first.id)
    assert store.current("main") is None
    second = store.create("main")
    assert store.current("main").id == second.id
    assert {s.id for s in store.list(key="main")} == {first.id, second.id}
    with pytest.raises(NotFoundError):
        store.get("no-such-session")


def test_memory_context_is_not_indexed_or_titled(store):
    info = store.create(None)
    block = "<memory-context>\n- memory/2026-05-01.md:1-1: zebra crossing notes\n</memory-context>\n\nhello there"
    store.append(info.id, {"role": "user", "content": block}, text="hello there")
    assert store.get(info.id).title == "hello there"
    assert store.search("zebra") == []
    assert [h.seq for h in store.search("hello")] == [1]


def test_search_words_cjk_and_substrings(store):
    a = _talk(store, "a", [("We chose PostgreSQL for the billing service", "Noted, PostgreSQL it is.")])
    b = _talk(store, "b", [("明天部署新版本到生产环境", "好的，我会准备部署清单。")])
    hits = store.search("billing postgresql")
    assert [(h.session_id, h.seq, h.role) for h in hits] == [(a.id, 1, "user")]
    assert "[PostgreSQL]" in hits[0].snippet and "[billing]" in hits[0].snippet
    cjk = store.search("部署新版本")
    assert [(h.session_id, h.seq) for h in cjk] == [(b.id, 1)]
    two = store.search("清单")  # two CJK characters: below trigram length, still found
    assert [(h.session_id, h.seq) for h in two] == [(b.id, 2)]
    sub = store.search("greSQL")  # a substring of a word, via the trigram table
    assert {h.session_id for h in sub} == {a.id}
    assert store.search("kubernetes") == []


def test_torn_last_line_does_not_lose_the_session(store, workspace):
    info = _talk(store, "main", [("keep me", "kept")])
    path = workspace.kit_dir / "sessions" / f"{info.id}.jsonl"
    with path.open("a") as fh:
        fh.write('{"seq": 3, "role": "user", "cont')
    assert [m["content"] for m in store.load_messages(info.id)] == ["keep me", "kept"]


def test_cli_list_show_search(store, workspace, cli):
    info = _talk(store, "main", [("Plan the offsite in Lisbon", "Booked a venue near Alfama.")])
    result = cli("sessions", "list", "--json", "-w", workspace.root)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [s["id"] for s in data["sessions"]] == [info.id]
    row = data["sessions"][0]
    assert row["key"] == "main" and row["title"] == "Plan the offsite in Lisbon" and row["messages"] == 2
    assert row["tokens"] == {"prompt": 100, "completion": 20, "total": 120}

    shown = json.loads(cli("sessions", "show", info.id, "--json", "-w", workspace.root).output)
    assert [m["content"] for m in shown["messages"]] == ["Plan the offsite in Lisbon", "Booked a venue near Alfama."]

    found = json.loads(cli("sessions", "search", "lisbon", "--json", "-w", workspace.root).output)
    assert found["query"] == "lisbon"
    assert [(r["session"], r["seq"], r["role"]) for r in found["results"]] == [(info.id, 1, "user")]

    missing = cli("sessions", "show", "nope", "-w", workspace.root)
    assert missing.exit_code == 1
    assert "no session 'nope'" in missing.output


def test_cli_human_output(store, workspace, cli):
    info = _talk(store, "main", [("Plan the offsite in Lisbon", "Booked a venue near Alfama.")])
    store.append(info.id, {"role": "assistant", "content": "",
                           "tool_calls": [{"id": "c1", "type": "function",
                                           "function": {"name": "memory_search", "arguments": "{}"}}]})
    store.append(info.id, {"role": "tool", "tool_call_id": "c1", "name": "memory_search", "content": "x" * 500})
    listed = cli("sessions", "list", "-w", workspace.root)
    assert listed.exit_code == 0 and info.id in listed.stdout and "2026-05-07" in listed.stdout
    assert " ".join(listed.stdout.split()).count("Plan the offsite") == 1
    shown = cli("sessions", "show", info.id[:15], "-w", workspace.root)
    assert shown.exit_code == 0
    assert "user #1: Plan the offsite in Lisbon" in shown.stdout
    assert "[calls memory_search]" in shown.stdout
    assert "x" * 299 + "…" in shown.stdout.replace("\n", "")
    found = cli("sessions", "search", "alfama", "-w", workspace.root)
    assert f"{info.id} #2 assistant: Booked a venue near [Alfama]." in found.stdout
    empty = cli("sessions", "search", "zanzibar", "-w", workspace.root)
    assert empty.stdout.strip() == "no matches"
    # regression: an empty query printed "no matches" with exit 0 (kit memory search "" is a usage error)
    blank = cli("sessions", "search", "  ", "-w", workspace.root)
    assert blank.exit_code == 2 and "QUERY is empty: say what to search for" in blank.output


def test_cli_prints_titles_and_keys_with_brackets_as_text(store, workspace, cli):
    """Titles and keys are user text; "[/dim]" in one raised MarkupError (a traceback) in list."""
    info = _talk(store, "team[/b]", [("close the [/dim] tag [red]now", "ok")])
    listed = cli("sessions", "list", "-w", workspace.root)
    assert listed.exit_code == 0
    flat = " ".join(listed.stdout.split())
    assert "team[/b]" in flat and "close the [/dim] tag [red]now" in flat
    shown = cli("sessions", "show", info.id, "-w", workspace.root)
    assert shown.exit_code == 0 and "key team[/b]" in shown.stdout


def test_concurrent_appends_from_two_processes_never_collide(store, workspace, tmp_path):
    import subprocess
    import sys

    info = store.create("shared")
    code = f"""
import sys
from kit.workspace import Workspace
from kit.agent.sessions import SessionStore
store = SessionStore(Workspace.open({str(workspace.root)!r}))
for i in range(40):
    store.append({info.id!r}, {{"role": "user", "content": sys.argv[1] + str(i)}})
"""
    procs = [subprocess.Popen([sys.executable, "-c", code, tag]) for tag in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    lines = store.transcript(info.id)
    assert sorted(line["seq"] for line in lines) == list(range(1, 81))
    assert store.get(info.id).messages == 80
    assert sorted(line["content"] for line in lines) == sorted(f"{t}{i}" for t in "ab" for i in range(40))


def test_one_shot_sessions_have_no_key_in_table_or_json(store, workspace, cli):
    """Regression: the table left the key blank for a one-shot run while --json said key == id;
    both now say there is none ("-" and null)."""
    one_shot = _talk(store, None, [("Plan the offsite in Lisbon", "Booked.")])
    named = _talk(store, "main", [("Book the train", "Done.")])
    data = json.loads(cli("sessions", "list", "--json", "-w", workspace.root).stdout)
    assert {s["id"]: s["key"] for s in data["sessions"]} == {one_shot.id: None, named.id: "main"}
    shown = json.loads(cli("sessions", "show", one_shot.id, "--json", "-w", workspace.root).stdout)
    assert shown["session"]["key"] is None
    found = json.loads(cli("sessions", "search", "lisbon", "--json", "-w", workspace.root).stdout)
    assert [(r["session"], r["key"]) for r in found["results"]] == [(one_shot.id, None)]

    rows = {line.split()[0]: line.split()[1] for line in
            cli("sessions", "list", "-w", workspace.root).stdout.splitlines() if line.strip().startswith("2026")}
    assert rows == {one_shot.id: "-", named.id: "main"}
    header = cli("sessions", "show", one_shot.id, "-w", workspace.root).stdout.splitlines()[0]
    assert header == f"{one_shot.id} · key - · 2 messages · 120 tokens"


def test_search_snippets_mark_only_real_cuts(store):
    """Regression: FTS5 marks a trigram snippet as cut when only punctuation is left out
    ("Meet in L[isbo]n…" for "Meet in Lisbon?"); "…" now means words were left out."""
    info = store.create("main")
    for text in ("Meet in Lisbon?", "See you in Lisbon.", "A [draft] … about Lisbon!",
                 "The offsite checklist lives in memory/2026-05-05.md and covers staging and rollback."):
        store.append(info.id, {"role": "user", "content": text})
    # short messages are shown whole (they were cut mid-word: "…you in L[isbo]n.", "…e ch[ecklis]t li…")
    assert [h.snippet for h in store.search("isbo")] == [
        "Meet in L[isbo]n?", "See you in L[isbo]n.", "A [draft] … about L[isbo]n!"]
    assert [h.snippet for h in store.search("lisbon")] == [
        "Meet in [Lisbon]?", "See you in [Lisbon].", "A [draft] … about [Lisbon]!"]
    assert [h.snippet for h in store.search("ecklis")] == [
        "The offsite ch[ecklis]t lives in memory/2026-05-05.md and covers staging and rollback."]
    # a long one is cut, "…" where words were left out, never for a bare "?" at the edge
    store.append(info.id, {"role": "user", "content": "lorem " * 30 + "Lisbon?"})
    assert store.search("lisbon")[-1].snippet.startswith("…lorem ")
    assert store.search("lisbon")[-1].snippet.endswith("lorem [Lisbon]?")
    # the short-query scan (LIKE ignores case): the match is marked, and a cut is marked
    assert [h.snippet for h in store.search("LI")][:2] == ["Meet in [Li]sbon?", "See you in [Li]sbon."]


def test_a_whole_word_hit_does_not_hide_substring_hits(store):
    """Regression: "deploy" found the user's "When do we deploy?" and missed the reply "Deploys
    are on Tuesdays." — a whole-word hit switched the substring (trigram) search off. Now both
    run: whole-word hits first, then messages holding the query inside a longer word, once each."""
    info = _talk(store, None, [("When do we deploy?", "Deploys are on Tuesdays.")])
    other = _talk(store, "ops", [("The redeployment finished", "deploy went fine")])
    hits = store.search("deploy")
    assert {(h.session_id, h.seq) for h in hits[:2]} == {(info.id, 1), (other.id, 2)}  # whole words first
    assert sorted((h.session_id, h.seq) for h in hits) == sorted(
        [(info.id, 1), (info.id, 2), (other.id, 1), (other.id, 2)])  # every message, no duplicates
    said = {(h.session_id, h.seq): h.snippet for h in hits}
    assert said[(info.id, 2)] == "[Deploy]s are on Tuesdays."
    assert said[(other.id, 1)] == "The re[deploy]ment finished"
    assert [h.seq for h in store.search("deploy", limit=2)] == [hits[0].seq, hits[1].seq]
    # several words: each must be in the message, as a word or inside one
    assert [(h.session_id, h.seq) for h in store.search("deploy tuesday")] == [(info.id, 2)]
    on = store.search("on deploy")  # a short word still counts (a substring, as trigram cannot look it up)
    assert [(h.session_id, h.seq, h.snippet) for h in on] == [(info.id, 2, "[Deploy]s are [on] Tuesdays.")]
    assert store.search("deploy kubernetes") == []
    # overlapping matches are marked once: "de" (a short part) inside "deploy"
    assert {h.seq: h.snippet for h in store.search("de deploy") if h.session_id == other.id} == {
        1: "The re[deploy]ment finished", 2: "[deploy] went fine"}


def test_whole_word_hits_rank_before_substring_hits(store):
    """Even where the substring table alone would rank a short text first (bm25 favours it)."""
    info = store.create("main")
    store.append(info.id, {"role": "user", "content": "Deploys."})
    store.append(info.id, {"role": "user", "content": "We talked for an hour and at the very end about when to deploy."})
    assert [h.seq for h in store.search("deploy")] == [2, 1]


def test_a_short_query_finds_words_and_longer_words(store):
    """The same for a query below trigram length: a whole-word hit no longer hides the scan."""
    _talk(store, None, [("go now", "going there")])
    assert [h.seq for h in store.search("go")] == [1, 2]
    assert [h.snippet for h in store.search("go")] == ["[go] now", "[go]ing there"]


def test_snippets_show_short_messages_whole_and_cut_long_ones_at_words(store):
    """Regression: a 24-character reply came back as "De[ploy]s are on…" (a trigram snippet is
    12 three-letter tokens, cut mid-word). A short message is shown whole; a long one is cut at
    word boundaries around the match, "…" where words were left out."""
    info = store.create("main")
    store.append(info.id, {"role": "assistant", "content": "Deploys are on Tuesdays."})
    words = [f"word{i:02d}" for i in range(60)]
    long = " ".join(words[:30] + ["redeploying"] + words[30:])
    store.append(info.id, {"role": "assistant", "content": long})
    hits = {h.seq: h.snippet for h in store.search("ploy")}
    assert hits[1] == "De[ploy]s are on Tuesdays."
    cut = hits[2]
    assert cut.startswith("…") and cut.endswith("…") and "rede[ploy]ing" in cut
    inner = cut[1:-1].replace("[", "").replace("]", "")
    assert inner in long and len(inner) <= SNIPPET_CHARS
    assert inner.split() == long[long.index(inner):].split()[:len(inner.split())]
    assert all(w in words or w == "redeploying" for w in inner.split())  # no word cut in two
    # the same for a whole-word hit and for the short-query scan
    whole = store.search("redeploying")[0].snippet
    assert whole.startswith("…") and "[redeploying]" in whole and whole.endswith("…")
    assert all(w.strip("[]") in words + ["redeploying"] for w in whole.strip("…").split())
    near_start = store.search("word01")[0].snippet
    assert near_start.startswith("word00 [word01] word02") and near_start.endswith("…")
    assert all(w.strip("[]") in words for w in near_start.rstrip("…").split())


def test_short_queries_ignore_case_beyond_ascii(store):
    """SQLite's LIKE folds ASCII letters only: a one-letter "ö" missed "Ölaf", and "Ü" as the
    short part of a longer query missed "über"."""
    _talk(store, None, [("Ölaf fährt", "Das Wort cödé"), ("ÜBER alles", "über Paris")])
    assert [h.snippet for h in store.search("ö")] == ["[Ö]laf fährt", "Das Wort c[ö]dé"]
    assert [h.snippet for h in store.search("Ö")] == ["[Ö]laf fährt", "Das Wort c[ö]dé"]
    assert [h.seq for h in store.search("ü alles")] == [3]
    assert [h.seq for h in store.search("Ü Paris")] == [4]
    assert store.search("ø") == []


def test_an_empty_session_reference_is_refused_plainly(store, workspace, cli):
    """Regression (new-user pass): `kit sessions show ""` said the empty string is ambiguous,
    listing five ids (it is the prefix of every id)."""
    _talk(store, "a", [("hi", "hello")])
    _talk(store, "b", [("hi", "hello")])
    shown = cli("sessions", "show", "", "-w", workspace.root)
    assert shown.exit_code == 1
    assert shown.stderr == "kit: no session named '': give an id, an id prefix or a key (`kit sessions list`)\n"
