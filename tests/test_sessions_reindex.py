"""A lost session index comes back from the transcripts: `.kit/sessions/<id>.jsonl` holds
everything the index had (a `session:start` record with the key, model and start; `session:end`;
each message's `ts`), and opening the store re-indexes what the index lacks — cheaply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers_agent import recorded_calls, set_config, write_script
from kit.agent.sessions import SessionStore
from kit.providers.base import Usage

QUIET = "memory:\n  active_recall: {enabled: false}\n"
NOTICE = "kit: re-indexed {n} from .kit/sessions/ (the session index in .kit/state.db lacked them)"


def _drop_state(root: Path) -> None:
    for path in (root / ".kit").glob("state.db*"):
        path.unlink()


def _index(store: SessionStore) -> dict[str, list]:
    db = store.db
    return {
        "sessions": [dict(r) for r in db.execute("SELECT * FROM sessions ORDER BY rowid")],
        **{table: [tuple(r) for r in db.execute(
            f"SELECT session_id, seq, role, content FROM {table} ORDER BY session_id, seq")]
           for table in ("session_fts", "session_trigram")},
    }


def _conversations(store: SessionStore) -> list[str]:
    """Sessions as an agent writes them: keyed and not, ended, with hidden, compaction, tool and
    recall-context lines, several models, and one that never got a message."""
    first = store.create("work", model="script:a.yaml")
    store.append(first.id, {"role": "user", "content": "<memory-context>\n- x\n</memory-context>\n\nWhen do we deploy?"},
                 text="When do we deploy?")
    store.append(first.id, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "memory_search", "arguments": "{}"}}]},
        usage=Usage(120, 9), model="openai/gpt-4o-mini")
    store.append(first.id, {"role": "tool", "tool_call_id": "c1", "name": "memory_search", "content": "Tuesdays"})
    store.append(first.id, {"role": "assistant", "content": "Deploys are on Tuesdays."}, usage=Usage(150, 6),
                 model="openai/gpt-4o-mini", finish_reason="stop")
    store.append(first.id, {"role": "user", "content": "save what matters"}, hidden=True, kind="flush")
    store.append(first.id, {"role": "assistant", "content": "NO_REPLY"}, usage=Usage(10, 1), hidden=True)
    store.append(first.id, {"role": "user", "content": "[summary] deploys on Tuesdays"}, kind="compaction",
                 mode="summary", dropped=4)
    store.end(first.id)
    second = store.create("work")  # /new: the key's current session
    store.append(second.id, {"role": "user", "content": "明天部署新版本"})
    store.append(second.id, {"role": "assistant", "content": "好的"}, usage=Usage(30, 2), model="local/qwen")
    one_shot = store.create(None, model="script:b.yaml")
    store.append(one_shot.id, {"role": "user", "content": "/skill plan"}, text="/skill plan")
    store.append(one_shot.id, {"role": "assistant", "content": "Planned."}, usage=Usage(40, 3))
    empty = store.create("idle")
    return [first.id, second.id, one_shot.id, empty.id]


def test_a_deleted_index_is_rebuilt_row_for_row(workspace):
    store = SessionStore(workspace)
    first, second, _, empty = _conversations(store)
    before = _index(store)
    listed = store.list()
    found = [(h.session_id, h.seq) for q in ("deploy", "部署", "plan") for h in store.search(q)]
    store.close()
    _drop_state(workspace.root)

    rebuilt = SessionStore(workspace)
    assert rebuilt.list() == listed
    assert rebuilt.reindexed == 4
    assert _index(rebuilt) == before  # every column, every search row, in the same order
    assert [(h.session_id, h.seq) for q in ("deploy", "部署", "plan") for h in rebuilt.search(q)] == found
    assert rebuilt.current("work").id == second  # the ended one stays ended
    assert rebuilt.get("idle").id == empty
    assert rebuilt.get(first).ended is not None and rebuilt.get(first).title == "When do we deploy?"
    assert [m["content"] for m in rebuilt.load_messages(first)] == ["[summary] deploys on Tuesdays"]
    rebuilt.close()
    again = SessionStore(workspace)
    assert (_index(again), again.reindexed) == (before, 0)  # once: the next open finds nothing missing
    again.close()


def test_an_index_missing_some_transcripts_gets_just_those(workspace):
    store = SessionStore(workspace)
    ids = _conversations(store)
    before = _index(store)
    # an older copy of state.db put back: it knew only the first two sessions
    store.db.execute("DELETE FROM sessions WHERE id IN (?, ?)", ids[2:])
    for table in ("session_fts", "session_trigram"):
        store.db.execute(f"DELETE FROM {table} WHERE session_id IN (?, ?)", ids[2:])
    store.close()
    rebuilt = SessionStore(workspace)
    assert (rebuilt.reindex(), rebuilt.reindexed) == (0, 2)  # done on open; nothing left for a second call
    assert _index(rebuilt) == before
    rebuilt.close()


def test_opening_a_complete_index_reads_no_transcript(workspace, monkeypatch):
    store = SessionStore(workspace)
    _conversations(store)
    store.close()

    def no_reading(self, session_id):
        raise AssertionError(f"read {session_id} to open the store")

    monkeypatch.setattr(SessionStore, "_lines", no_reading)
    fresh = SessionStore(workspace)
    assert len(fresh.list()) == 4 and fresh.reindexed == 0
    fresh.close()


def test_a_transcript_from_before_the_start_record_and_an_unreadable_one(workspace, cli):
    sessions = workspace.kit_dir / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "20260501-090000-abcdef.jsonl").write_text(
        '{"seq": 1, "ts": "2026-05-01T09:00:05+00:00", "role": "user", "content": "old question"}\n'
        '{"seq": 2, "ts": "2026-05-01T09:00:09+00:00", "role": "assistant", "content": "old answer", '
        '"usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}, "model": "m"}\n')
    (sessions / "20260502-090000-badbad.jsonl").mkdir()  # not a file: left out, never in the way
    result = cli("sessions", "list", "--json", "-w", workspace.root)
    assert result.exit_code == 0
    assert result.stderr == NOTICE.format(n="1 session") + "\n" + (
        "kit: warning: .kit/sessions/20260502-090000-badbad.jsonl: not re-indexed (is a directory, expected a "
        "regular file; not read); kit sessions cannot show it until it reads\n")
    assert json.loads(result.stdout)["sessions"] == [{
        "id": "20260501-090000-abcdef", "key": None, "title": "old question",  # the key was never written down
        "created": "2026-05-01T09:00:05+00:00", "updated": "2026-05-01T09:00:09+00:00", "ended": None,
        "messages": 2, "tokens": {"prompt": 7, "completion": 2, "total": 9}, "model": "m"}]


@pytest.mark.parametrize("lost", ["deleted", "moved aside"])
def test_kit_sessions_and_run_after_the_index_is_lost(ws_path, tmp_path, cli, lost):
    """The user's story: a few `kit run --session work` turns, state.db gone, and everything
    still there — list, show, search and resuming by key."""
    set_config(ws_path, QUIET)
    for n, message in enumerate(["when do we deploy?", "and the checklist?"]):
        script = write_script(tmp_path, [{"text": f"answer {n}", "usage": {"prompt_tokens": 10, "completion_tokens": 2}}],
                              name=f"s{n}.yaml")
        assert cli("run", "-w", ws_path, "--model", f"script:{script}", "--session", "work", message).exit_code == 0
    script = write_script(tmp_path, [{"text": "done"}], name="one.yaml")
    assert cli("run", "-w", ws_path, "--model", f"script:{script}", "one shot").exit_code == 0
    listed = cli("sessions", "list", "--json", "-w", ws_path)
    shown = cli("sessions", "show", "work", "--json", "-w", ws_path)
    found = cli("sessions", "search", "checklist", "--json", "-w", ws_path)
    work = json.loads(shown.stdout)["session"]["id"]

    if lost == "deleted":
        _drop_state(ws_path)
    else:  # a damaged one moved aside, as Kit's error advises
        (ws_path / ".kit" / "state.db").rename(ws_path / ".kit" / "state.db.broken")

    after = cli("sessions", "list", "--json", "-w", ws_path)
    assert after.exit_code == 0
    assert after.stdout == listed.stdout  # the same sessions, rows and order
    assert after.stderr == NOTICE.format(n="2 sessions") + "\n"
    again = cli("sessions", "show", "work", "--json", "-w", ws_path)
    assert (again.stdout, again.stderr) == (shown.stdout, "")  # messages without the session records
    assert cli("sessions", "search", "checklist", "--json", "-w", ws_path).stdout == found.stdout

    script = write_script(tmp_path, [{"text": "resumed"}], name="s2.yaml")
    resumed = cli("run", "-w", ws_path, "--model", f"script:{script}", "--session", "work", "--json", "go on")
    assert json.loads(resumed.stdout)["session"] == work  # not a new session
    sent = [(m["role"], m["content"]) for m in recorded_calls(script)[0]["messages"] if m["role"] != "system"]
    assert sent == [("user", "when do we deploy?"), ("assistant", "answer 0"), ("user", "and the checklist?"),
                    ("assistant", "answer 1"), ("user", "go on")]


def _transcript(root: Path, session_id: str, *lines: str) -> None:
    sessions = root / ".kit" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / f"{session_id}.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_out_of_range_numbers_and_times_in_a_transcript_do_not_stop_kit_sessions(workspace, cli):
    """Regression: a seq beyond SQLite's INTEGER (OverflowError at the INSERT) or a start in year 1
    (`year 0 is out of range`) crashed every open, and again the next time: the row never went in."""
    _transcript(workspace.root, "20260501-090000-aaaaaa",
                '{"kind": "session:start", "ts": "0001-01-01T00:00:00", "key": "far"}',
                '{"seq": 1, "ts": "2026-05-01T09:00:05+00:00", "role": "user", "content": "first"}',
                '{"seq": 99999999999999999999999, "ts": "2026-05-01T09:00:06+00:00", "role": "user", "content": "huge"}',
                '{"seq": 2, "ts": "9999-12-31T23:59:59-14:00", "role": "assistant", "content": "late", '
                '"usage": {"prompt_tokens": 99999999999999999999999, "completion_tokens": 3}}')
    _transcript(workspace.root, "20260502-090000-bbbbbb",
                '{"kind": "session:start", "ts": "2026-05-02T09:00:00+00:00", "key": "k\\ud800"}',
                '{"seq": 1, "ts": "2026-05-02T09:00:01+00:00", "role": "user", "content": "lone \\udc00 surrogate"}')
    for _ in range(2):  # and the next command alike
        result = cli("sessions", "list", "--json", "-w", workspace.root)
        assert result.exit_code == 0, result.output
        listed = {s["id"]: s for s in json.loads(result.stdout)["sessions"]}
        assert sorted(listed) == ["20260501-090000-aaaaaa", "20260502-090000-bbbbbb"]
    far = listed["20260501-090000-aaaaaa"]
    # the start out of range: the first message's time; the last one out of range: `updated` is the start
    assert (far["key"], far["created"], far["updated"]) == ("far", "2026-05-01T09:00:05+00:00",
                                                           "2026-05-01T09:00:05+00:00")
    assert (far["messages"], far["tokens"]) == (2, {"prompt": 0, "completion": 3, "total": 3})
    assert listed["20260502-090000-bbbbbb"]["key"] == "k?"
    found = cli("sessions", "search", "surrogate", "--json", "-w", workspace.root)
    assert found.exit_code == 0 and "lone ? surrogate" in found.stdout


def test_one_transcript_that_cannot_be_indexed_is_left_out_and_named(workspace, monkeypatch):
    for n, session_id in enumerate(["20260501-090000-aaaaaa", "20260502-090000-bbbbbb", "20260503-090000-cccccc"]):
        _transcript(workspace.root, session_id, f'{{"seq": 1, "ts": "2026-05-0{n + 1}T09:00:00+00:00", '
                                                f'"role": "user", "content": "hello {n}"}}')
    rebuilt, index_text = SessionStore._rebuilt, SessionStore._index_text

    def rebuilt_but_one(self, session_id):
        if session_id.endswith("aaaaaa"):
            raise RuntimeError("something no one foresaw")
        return rebuilt(self, session_id)

    def index_text_but_one(db, session_id, searchable):
        if session_id.endswith("bbbbbb"):
            raise ValueError("a value SQLite refuses")
        index_text(db, session_id, searchable)

    monkeypatch.setattr(SessionStore, "_rebuilt", rebuilt_but_one)
    monkeypatch.setattr(SessionStore, "_index_text", staticmethod(index_text_but_one))
    store = SessionStore(workspace)
    assert [s.id for s in store.list()] == ["20260503-090000-cccccc"]  # the row of bbbbbb went with its text
    assert (store.reindexed, store.unindexed) == (1, {
        "20260501-090000-aaaaaa": "RuntimeError: something no one foresaw",
        "20260502-090000-bbbbbb": "ValueError: a value SQLite refuses"})
    assert [h.session_id for h in store.search("hello")] == ["20260503-090000-cccccc"]
    store.close()



def test_kit_sessions_names_a_transcript_it_could_not_re_index(workspace, monkeypatch, cli):
    _transcript(workspace.root, "20260501-090000-aaaaaa",
                '{"seq": 1, "ts": "2026-05-01T09:00:00+00:00", "role": "user", "content": "hello"}')
    monkeypatch.setattr(SessionStore, "_rebuilt", lambda self, session_id: (_ for _ in ()).throw(
        RuntimeError("something no one foresaw")))
    result = cli("sessions", "list", "-w", workspace.root)
    assert result.exit_code == 0
    assert result.stderr == ("kit: warning: .kit/sessions/20260501-090000-aaaaaa.jsonl: not re-indexed "
                             "(RuntimeError: something no one foresaw); kit sessions cannot show it until it reads\n")


def test_appending_to_a_session_an_older_state_db_has_behind_writes_no_seq_twice(workspace):
    """An older copy of state.db put back: the session's row says 2 messages, the transcript 4.
    The next append is seq 5, and the row and search rows are those of the whole transcript."""
    store = SessionStore(workspace)
    session = store.create("work")
    store.append(session.id, {"role": "user", "content": "when do we deploy?"})
    store.append(session.id, {"role": "assistant", "content": "Tuesdays."}, usage=Usage(10, 2))
    store.close()
    kit = workspace.root / ".kit"
    saved = {path.name: path.read_bytes() for path in kit.glob("state.db*")}

    store = SessionStore(workspace)
    store.append(session.id, {"role": "user", "content": "and the checklist?"})
    store.append(session.id, {"role": "assistant", "content": "In the wiki."}, usage=Usage(20, 3))
    store.close()
    _drop_state(workspace.root)
    for name, data in saved.items():
        (kit / name).write_bytes(data)

    store = SessionStore(workspace)
    assert store.reindexed == 0 and store.get(session.id).messages == 2  # behind, and not looked at on open
    assert store.append(session.id, {"role": "user", "content": "thanks"}) == 5
    lines = [json.loads(line) for line in store.transcript_path(session.id).read_text().splitlines()]
    assert [line.get("seq") for line in lines] == [None, 1, 2, 3, 4, 5]
    after = _index(store)
    assert after["sessions"][0]["messages"] == 5
    assert [h.seq for h in store.search("checklist")] == [3]
    store.close()
    _drop_state(workspace.root)
    fresh = SessionStore(workspace)
    assert _index(fresh) == after  # the same as a whole re-index makes
    fresh.close()
