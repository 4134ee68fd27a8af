"""Sessions (§9): JSONL transcripts in .kit/sessions/<id>.jsonl and an index in state.db.

A session *key* names a conversation thread ("main", "cli", a chat id); it points at the current
session *id*. `/new` ends the current id and starts a new one under the same key. Each transcript
line is one message (OpenAI chat shape) plus `seq`, `ts` and, for model replies, `usage`.

Lines with `hidden: true` (the silent memory-flush turn) are kept for audit but not replayed;
a `kind: "compaction"` line records how the live history was compacted so that resuming a
session rebuilds exactly the history the model last saw.

The index (component "sessions") holds key → id, title, timestamps and token counts, plus two
FTS5 tables over message text: unicode61 for words and trigram for CJK and substrings. Everything
in it can be rebuilt from the transcripts: a `session:start` record opens each transcript (key,
model, the exact start time), a `session:end` record marks its end, and each message's `ts` is the
time the index took as `updated`. Opening the store re-indexes the transcripts the index lacks (a
deleted or moved-aside state.db, an older copy put back): `reindexed` says how many, `unindexed`
which transcripts could not be (and why). A row an older copy holds for a session that went on is
brought up to date from its transcript when the session is next appended to.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from kit import clock
from kit.core import WorkspaceCore
from kit.errors import KitError, NotFoundError
from kit.state import PerThread, StateDB

MIGRATIONS = (
    """CREATE TABLE sessions (
  id TEXT PRIMARY KEY, key TEXT NOT NULL, title TEXT NOT NULL DEFAULT '',
  created REAL NOT NULL, updated REAL NOT NULL, ended REAL,
  prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
  messages INTEGER NOT NULL DEFAULT 0, model TEXT NOT NULL DEFAULT '');
CREATE INDEX sessions_key ON sessions(key, created);
CREATE VIRTUAL TABLE session_fts USING fts5(
  content, session_id UNINDEXED, seq UNINDEXED, role UNINDEXED, tokenize='unicode61');
CREATE VIRTUAL TABLE session_trigram USING fts5(
  content, session_id UNINDEXED, seq UNINDEXED, role UNINDEXED, tokenize='trigram')""",
)

TITLE_CHARS = 60
# transcript lines that are not messages: where a session starts (its key) and ends
SESSION_START, SESSION_END = "session:start", "session:end"
_ID_RE = re.compile(r"[A-Za-z0-9_.-]+")
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_WORD_RE = re.compile(r"\w+", re.UNICODE)
_MEMORY_CONTEXT_RE = re.compile(r"<memory-context>.*?</memory-context>\s*|\s*<hook-context>\n.*?\n</hook-context>\s*$",
                                re.DOTALL)


def strip_memory_context(text: str) -> str:
    """The user's own words, without the active-recall block Kit added."""
    return _MEMORY_CONTEXT_RE.sub("", text or "").strip()


_SKILL_BLOCK_RE = re.compile(r'<skill name="([^"\n]+)">\n.*?\n</skill>\n\n', re.DOTALL)


def skill_default(name: str) -> str:
    """What a `/skill NAME` turn asks when the user typed no message."""
    return f"Follow the {name} skill."


def skill_message(name: str, body: str, rest: str) -> str:
    """The text the model receives for `/skill NAME rest`: the skill's body in a <skill> block."""
    return f'<skill name="{name}">\n{body.strip()}\n</skill>\n\n' + (rest.strip() or skill_default(name))


def invoked_skill(text: str) -> str | None:
    """The skill a `/skill NAME …` message carries, or None."""
    match = _SKILL_BLOCK_RE.match(strip_memory_context(text))
    return match.group(1) if match else None


def typed_text(text: str) -> str:
    """What the user typed: without the active-recall block, and a `/skill NAME msg` turn as
    `/skill NAME msg` rather than the skill body the model received."""
    text = strip_memory_context(text)
    match = _SKILL_BLOCK_RE.match(text)
    if match is None:
        return text
    name, rest = match.group(1), text[match.end():].strip()
    return f"/skill {name}" + ("" if rest == skill_default(name) else f" {rest}")


def key_or_none(key: str, session_id: str) -> str | None:
    """A session's key as shown: None for a session without one of its own (key == id)."""
    return None if key == session_id else key


def new_session_id() -> str:
    return f"{clock.now():%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def _title(text: str) -> str:
    line = next((ln.strip() for ln in strip_memory_context(text).splitlines() if ln.strip()), "")
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


@dataclass(frozen=True)
class SessionInfo:
    id: str
    key: str
    title: str
    created: float
    updated: float
    ended: float | None
    prompt_tokens: int
    completion_tokens: int
    messages: int
    model: str

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def own_key(self) -> str | None:
        """The key it was given (`--session KEY`), None for an unnamed one (whose key is its id)."""
        return key_or_none(self.key, self.id)

    def to_json(self) -> dict[str, Any]:
        from datetime import datetime

        def iso(ts: float | None) -> str | None:
            return None if ts is None else datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")

        return {
            "id": self.id,
            "key": self.own_key,
            "title": self.title,
            "created": iso(self.created),
            "updated": iso(self.updated),
            "ended": iso(self.ended),
            "messages": self.messages,
            "tokens": {
                "prompt": self.prompt_tokens,
                "completion": self.completion_tokens,
                "total": self.total_tokens,
            },
            "model": self.model,
        }


@dataclass(frozen=True)
class SessionHit:
    session_id: str
    key: str
    title: str
    seq: int
    role: str
    snippet: str
    created: float | None = None  # when the session began

    def to_json(self) -> dict[str, Any]:
        from datetime import datetime

        return {
            "session": self.session_id,
            "key": key_or_none(self.key, self.session_id),
            "title": self.title,
            # when the session began, in local time: "what did we decide last week" needs the day
            "started": None if self.created is None
            else datetime.fromtimestamp(self.created).astimezone().isoformat(timespec="seconds"),
            "seq": self.seq,
            "role": self.role,
            "snippet": self.snippet,
        }


@dataclass(frozen=True)
class ResumedState:
    history: list[dict[str, Any]]
    flushed: bool  # the memory flush of the current compaction cycle happened


def _row(r) -> SessionInfo:
    return SessionInfo(
        id=r["id"], key=r["key"], title=r["title"], created=r["created"], updated=r["updated"],
        ended=r["ended"], prompt_tokens=r["prompt_tokens"], completion_tokens=r["completion_tokens"],
        messages=r["messages"], model=r["model"],
    )


def sessions_for(ws: WorkspaceCore) -> SessionStore:
    """The workspace's one store (`ws.sessions`): every agent of a workspace writes through it,
    so its write lock covers them all."""
    return ws.owned("sessions", lambda: SessionStore(ws))


class SessionStore:
    """Transcripts and their index for one workspace. One SQLite connection per thread."""

    def __init__(self, ws: WorkspaceCore):
        self.ws = ws
        self.dir = ws.kit_dir / "sessions"
        self._db = PerThread(self._open_db)
        self._write_lock = threading.Lock()
        self.reindexed = 0  # transcripts this store put back into the index (see `reindex`)
        self.unindexed: dict[str, str] = {}  # session id -> why its transcript could not be re-indexed

    # ------------------------------------------------------------------ plumbing

    def _open_db(self) -> StateDB:
        db = self.ws.open_state("sessions", MIGRATIONS)
        db.conn.create_function("kit_contains", 2, _contains, deterministic=True)
        if not db.read_only:  # a read-only connection (doctor) would only throw the rows away
            try:
                self.reindexed += self.reindex(db)
            except BaseException:
                db.close()
                raise
        return db

    @property
    def db(self) -> StateDB:
        """This thread's connection to state.db."""
        return self._db.get()

    def close(self) -> None:
        """Close this thread's connection."""
        self._db.close()

    def transcript_path(self, session_id: str) -> Path:
        if not _ID_RE.fullmatch(session_id) or session_id.startswith("."):
            raise NotFoundError(f"not a session id: {session_id!r}")
        return self.dir / f"{session_id}.jsonl"

    # ------------------------------------------------------------------ lifecycle

    def create(self, key: str | None = None, *, model: str = "", session_id: str | None = None) -> SessionInfo:
        """Index a new session (`session_id`: one allocated earlier with `new_session_id`) and
        start its transcript with a `session:start` record: what the index needs beyond the
        messages (the key, the model, the exact start), so a lost index can be rebuilt."""
        session_id = session_id or new_session_id()
        path = self.transcript_path(session_id)
        moment = clock.now()
        record: dict[str, Any] = {"kind": SESSION_START, "ts": moment.isoformat(), "key": key or None}
        if model:
            record["model"] = model
        self.dir.mkdir(parents=True, exist_ok=True)
        with self._write_lock:
            db = self.db
            with db.transaction():  # row and record together: a re-index never sees one without the other
                db.execute(
                    "INSERT INTO sessions(id, key, created, updated, model) VALUES (?, ?, ?, ?, ?)",
                    (session_id, key or session_id, moment.timestamp(), moment.timestamp(), model),
                )
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        return self.get(session_id)

    def current(self, key: str) -> SessionInfo | None:
        """The open session a key points at (the newest one not ended)."""
        row = self.db.execute(
            "SELECT * FROM sessions WHERE key = ? AND ended IS NULL ORDER BY created DESC, rowid DESC LIMIT 1",
            (key,),
        ).fetchone()
        return _row(row) if row else None

    def get(self, ref: str) -> SessionInfo:
        """A session by id, unique id prefix, or key (its current or latest session)."""
        if not ref.strip():  # the empty prefix of every id: "ambiguous" would list five of them
            raise NotFoundError("no session named '': give an id, an id prefix or a key (`kit sessions list`)")
        row = self.db.execute("SELECT * FROM sessions WHERE id = ?", (ref,)).fetchone()
        if row is None:
            rows = self.db.execute(
                "SELECT * FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY created", (_like_prefix(ref),)
            ).fetchall()
            if len(rows) == 1:
                row = rows[0]
            elif len(rows) > 1:
                raise NotFoundError(f"session {ref!r} is ambiguous: {', '.join(r['id'] for r in rows[:5])}")
        if row is None:
            row = self.db.execute(
                "SELECT * FROM sessions WHERE key = ? ORDER BY (ended IS NULL) DESC, created DESC LIMIT 1",
                (ref,),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no session {ref!r}; `kit sessions list` shows them")
        return _row(row)

    def end(self, session_id: str) -> None:
        """Mark the session ended, in the index and (a `session:end` record) in its transcript."""
        moment = clock.now()
        path = self.transcript_path(session_id)
        with self._write_lock:
            db = self.db
            with db.transaction():
                ended = db.execute("UPDATE sessions SET ended = ? WHERE id = ? AND ended IS NULL",
                                   (moment.timestamp(), session_id)).rowcount
                if ended and path.is_file():
                    with path.open("a", encoding="utf-8") as handle:
                        handle.write(json.dumps({"kind": SESSION_END, "ts": moment.isoformat()}) + "\n")

    def list(self, limit: int | None = 50, key: str | None = None) -> list[SessionInfo]:
        sql = "SELECT * FROM sessions"
        params: list[Any] = []
        if key:
            sql += " WHERE key = ?"
            params.append(key)
        sql += " ORDER BY updated DESC, created DESC"
        if limit:
            sql += " LIMIT ?"
            params.append(limit)
        return [_row(r) for r in self.db.execute(sql, params)]

    # ------------------------------------------------------------------ transcript

    def append(
        self,
        session_id: str,
        message: dict[str, Any],
        *,
        usage: Any = None,
        model: str | None = None,
        **extra: Any,
    ) -> int:
        """Append one message line and update the index; returns its sequence number.

        The sequence number is taken and the line written inside one IMMEDIATE transaction, so
        two processes appending to the same session (two `kit run --session K`) never collide.
        """
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0) if usage is not None else 0
        completion = int(getattr(usage, "completion_tokens", 0) or 0) if usage is not None else 0
        role = message.get("role", "")
        searchable = self._searchable_text(message, extra)
        path = self.transcript_path(session_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._write_lock:
            db = self.db
            with db.transaction():
                row = db.execute("SELECT messages, title FROM sessions WHERE id = ?", (session_id,)).fetchone()
                if row is None:
                    raise NotFoundError(f"no session {session_id!r}")
                messages, last = int(row["messages"]), _last_seq(path)
                if last > messages:
                    # the row is behind its transcript (an older state.db put back, a crash between
                    # the line and the commit): rebuilt from it, and no seq is written twice
                    try:
                        row = self._refresh(db, session_id)
                    except (KitError, OSError):  # too big to read whole: the row stays as it is
                        pass
                    messages = max(last, int(row["messages"]))
                seq = messages + 1
                moment = clock.now()  # `ts` is `updated` exactly (to the microsecond): a re-index restores it
                line: dict[str, Any] = {"seq": seq, "ts": moment.isoformat()}
                line.update(message)
                line.update({k: v for k, v in extra.items() if v is not None and v is not False})
                if usage is not None:
                    line["usage"] = usage.to_json() if hasattr(usage, "to_json") else dict(usage)
                if model:
                    line["model"] = model  # who answered this message (after any failover)
                # append-only log: a crash loses at most the line being written, never earlier ones
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(line, ensure_ascii=False) + "\n")
                title = row["title"]
                if not title and role == "user" and not extra.get("hidden") and searchable:
                    title = _title(searchable)
                db.execute(
                    "UPDATE sessions SET messages = ?, updated = ?, title = ?, "
                    "prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?, "
                    "model = COALESCE(?, model) WHERE id = ?",
                    (seq, moment.timestamp(), title, prompt, completion, model or None, session_id),
                )
                if searchable and not extra.get("hidden"):
                    for table in ("session_fts", "session_trigram"):
                        db.execute(
                            f"INSERT INTO {table}(content, session_id, seq, role) VALUES (?, ?, ?, ?)",
                            (searchable, session_id, seq, role),
                        )
            return seq

    @staticmethod
    def _searchable_text(message: dict[str, Any], extra: dict[str, Any]) -> str:
        role = message.get("role")
        if role not in ("user", "assistant") or extra.get("kind") == "compaction":
            return ""
        text = extra.get("text") if role == "user" and extra.get("text") else message.get("content")
        return strip_memory_context(str(text or ""))

    def transcript(self, session_id: str) -> list[dict[str, Any]]:
        """The session's message lines, in order (without its `session:start`/`session:end`
        records); a line that cannot be read is a hidden `[unreadable line N]` placeholder."""
        return [line for line in self._lines(session_id) if not _is_record(line)]

    def _lines(self, session_id: str) -> list[dict[str, Any]]:
        from kit.fsutil import read_bytes

        path = self.transcript_path(session_id)
        if not os.path.lexists(path):
            raise NotFoundError(f"no transcript for session {session_id!r} ({path})")
        # a regular file only (a FIFO would block); DocumentError names the problem otherwise
        raw = read_bytes(path, max_bytes=MAX_TRANSCRIPT_BYTES, display=str(path))
        out = []
        for number, line in enumerate(raw.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line.decode("utf-8"))
            except (ValueError, RecursionError):  # not UTF-8, not JSON, a 5,000-digit number, nested too deep
                record = None
            if not isinstance(record, dict) or not isinstance(record.get("role", "system"), str):
                # a torn last line after a crash (or an edited file): skip it rather than lose the session
                record = {"seq": None, "role": "system", "content": f"[unreadable line {number}]", "hidden": True}
            out.append(record)
        return out

    def load_messages(self, session_id: str) -> list[dict[str, Any]]:
        """The live history as the model last saw it (compactions applied, hidden lines skipped)."""
        return self.load_state(session_id).history

    def load_state(self, session_id: str) -> ResumedState:
        """What a resumed session continues from: the live history, and whether this compaction
        cycle's memory flush already happened (a flush line after the last summary). The flag is
        the transcript's, so separate `kit run --session` processes flush once per cycle."""
        history: list[dict[str, Any]] = []
        flushed = False
        for line in self.transcript(session_id):
            if line.get("kind") == "flush":
                flushed = True
            if line.get("hidden"):
                continue
            if line.get("kind") == "compaction":
                history = apply_compaction_record(history, line)
                if line.get("mode") == "summary":
                    flushed = False  # a new cycle
                continue
            history.append(to_message(line))
        return ResumedState(history, flushed)

    # ------------------------------------------------------------------ re-index

    def reindex(self, db: StateDB | None = None) -> int:
        """Put back into the index every transcript in .kit/sessions/ it lacks (state.db deleted,
        moved aside, or an older copy put back that lacks newer sessions); returns how many. Cheap
        when nothing is missing — one directory listing and one query, no transcript read — so
        every open does it. A rebuilt row is the one the index had: key, model, start and end from
        the transcript's records, title, message count, tokens and `updated` from its messages, and
        the search rows. A transcript that cannot be read or indexed is left out, never in the way,
        and named in `unindexed`. A row that is there but behind its transcript is not looked at
        here (that would read every transcript): `append` brings it up to date."""
        db = db or self.db
        try:
            names = os.listdir(self.dir)
        except (FileNotFoundError, NotADirectoryError):
            return 0
        on_disk = {name[:-6] for name in names
                   if name.endswith(".jsonl") and _ID_RE.fullmatch(name[:-6]) and not name.startswith(".")}
        if not on_disk:
            return 0
        missing = on_disk - {r[0] for r in db.execute("SELECT id FROM sessions")}
        if not missing:
            return 0
        rebuilt = []
        for session_id in sorted(missing):
            try:
                rebuilt.append(self._rebuilt(session_id))
            except Exception as exc:  # noqa: BLE001 - unreadable (too big, not a file) or odd: left out
                self.unindexed[session_id] = _why(exc)
        rebuilt.sort(key=lambda r: (r[0].created, r[0].id))  # rowids in creation order, as they were
        added = 0
        with db.transaction():
            # another process may have re-indexed (and appended to) some of them meanwhile
            indexed = {r[0] for r in db.execute("SELECT id FROM sessions")}
            for info, searchable in rebuilt:
                if info.id in indexed:
                    continue
                db.execute("SAVEPOINT kit_reindex_one")  # one transcript's rows go in whole or not at all
                try:
                    db.execute(
                        "INSERT INTO sessions(id, key, title, created, updated, ended, prompt_tokens, "
                        "completion_tokens, messages, model) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (info.id, info.key, info.title, info.created, info.updated, info.ended,
                         info.prompt_tokens, info.completion_tokens, info.messages, info.model),
                    )
                    self._index_text(db, info.id, searchable)
                except (ValueError, OverflowError, TypeError) as exc:  # a value SQLite refuses
                    db.execute("ROLLBACK TO kit_reindex_one")
                    self.unindexed[info.id] = _why(exc)
                else:
                    added += 1
                db.execute("RELEASE kit_reindex_one")
        return added

    @staticmethod
    def _index_text(db: StateDB, session_id: str, searchable: list[tuple[int, str, str]]) -> None:
        for seq, role, text in searchable:
            for table in ("session_fts", "session_trigram"):
                db.execute(f"INSERT INTO {table}(content, session_id, seq, role) VALUES (?, ?, ?, ?)",
                           (text, session_id, seq, role))

    def _refresh(self, db: StateDB, session_id: str) -> Any:
        """Bring a session's row and search rows up to date with its transcript (inside the
        caller's transaction); returns the row's new `messages` and `title`."""
        info, searchable = self._rebuilt(session_id)
        db.execute(
            "UPDATE sessions SET title = ?, updated = MAX(updated, ?), ended = COALESCE(ended, ?), "
            "prompt_tokens = ?, completion_tokens = ?, messages = MAX(messages, ?), model = ? WHERE id = ?",
            (info.title, info.updated, info.ended, info.prompt_tokens, info.completion_tokens, info.messages,
             info.model, session_id),
        )
        for table in ("session_fts", "session_trigram"):
            db.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
        self._index_text(db, session_id, searchable)
        return db.execute("SELECT messages, title FROM sessions WHERE id = ?", (session_id,)).fetchone()

    def _rebuilt(self, session_id: str) -> tuple[SessionInfo, list[tuple[int, str, str]]]:
        """The index row and search rows `append` made for this transcript, from its lines."""
        lines = self._lines(session_id)
        start = next((ln for ln in lines if _is_record(ln) and ln.get("kind") == SESSION_START), {})
        end = next((ln for ln in lines if _is_record(ln) and ln.get("kind") == SESSION_END), None)
        messages = [ln for ln in lines if not _is_record(ln) and _is_seq(ln.get("seq"))]
        key = _text(start.get("key")) or session_id
        model = _text(start.get("model"))
        created = _when(start.get("ts"))
        if created is None:  # a transcript written before the start record existed
            created = next((t for t in (_when(ln.get("ts")) for ln in messages) if t is not None), None)
        if created is None:
            created = _id_time(session_id) or self.transcript_path(session_id).stat().st_mtime
        updated = next((t for t in (_when(ln.get("ts")) for ln in reversed(messages)) if t is not None), created)
        title, prompt, completion, searchable = "", 0, 0, []
        for line in messages:
            usage = line.get("usage") if isinstance(line.get("usage"), dict) else {}
            prompt = min(prompt + _count(usage.get("prompt_tokens")), INT64_MAX)
            completion = min(completion + _count(usage.get("completion_tokens")), INT64_MAX)
            model = _text(line.get("model")) or model
            role = _text(line.get("role"))
            text = _text(self._searchable_text(line, line))
            if not text or line.get("hidden"):
                continue
            if not title and role == "user":
                title = _title(text)
            searchable.append((line["seq"], role, text))
        info = SessionInfo(
            id=session_id, key=key, title=title, created=created, updated=updated,
            ended=_when(end.get("ts")) if end else None, prompt_tokens=prompt, completion_tokens=completion,
            messages=max((line["seq"] for line in messages), default=0), model=model,
        )
        return info, searchable

    # ------------------------------------------------------------------ search

    def search(self, query: str, *, limit: int = 20, exclude: str | None = None) -> list[SessionHit]:
        """Messages holding `query`, as words or inside longer words, best first: whole-word hits
        (unicode61) first, then substring hits (trigram; a scan below trigram length), each message
        once. `exclude`: a session id left out (the agent's session_search leaves out the
        conversation it is in)."""
        query = query.strip()
        if not query:
            return []
        rows: list[Any] = []
        words = _WORD_RE.findall(query)
        if words and not _CJK_RE.search(query):
            match = " AND ".join('"' + w.replace('"', '""') + '"' for w in words)
            rows = self._fts("session_fts", match, limit, exclude)
        # Always also the substring search, not only when no word matched: "deploy" is a word of
        # "When do we deploy?" and a substring of "Deploys are on Tuesdays." (the bug was `if not rows`).
        if len(query) >= 3:
            # trigram: CJK text (no word boundaries) and substrings of longer words; a part below
            # trigram length is still required, as a substring (LIKE)
            parts = re.split(r"\s+", query)
            long = [p for p in parts if len(p) >= 3] or [query]
            short = [p for p in parts if len(p) < 3] if long != [query] else []
            match = " AND ".join('"' + p.replace('"', '""') + '"' for p in long)
            rows += self._fts("session_trigram", match, limit, exclude, short)
        if len(query) < 3 or not rows:
            # one- and two-character queries are below trigram length: scan
            holds, arg = _holds(query)
            found = self.db.execute(
                "SELECT f.session_id, f.seq, f.role, f.content, s.key, s.title, s.created "
                f"FROM session_trigram f JOIN sessions s ON s.id = f.session_id "
                f"WHERE {holds} AND f.session_id != ? ORDER BY s.updated DESC, f.seq LIMIT ?",
                (arg, exclude or "", limit),
            ).fetchall()
            rows += [dict(r, snip=_snippet(r["content"], _occurrences(r["content"], query))) for r in found]
        hits: dict[tuple[str, int], SessionHit] = {}
        for r in rows:  # best first: a message found by both searches keeps its whole-word place
            hit = SessionHit(r["session_id"], r["key"], r["title"], int(r["seq"]), r["role"], r["snip"], r["created"])
            hits.setdefault((hit.session_id, hit.seq), hit)
        return list(hits.values())[:limit]

    def _fts(self, table: str, match: str, limit: int, exclude: str | None = None,
             substrings: list[str] | tuple[str, ...] = ()) -> list[Any]:
        """Rows of `table` matching `match` (and holding each of `substrings`), best first, each
        with its snippet. highlight() marks every match in the whole text; `_snippet` cuts it."""
        import sqlite3

        holds = [_holds(p) for p in substrings]
        like = "".join(f" AND {sql}" for sql, _ in holds)
        try:
            rows = self.db.execute(
                f"SELECT f.session_id, f.seq, f.role, f.content, "
                f"highlight({table}, 0, '{_HIT_OPEN}', '{_HIT_CLOSE}') AS marked, "
                f"s.key, s.title, s.created FROM {table} f JOIN sessions s ON s.id = f.session_id "
                f"WHERE {table} MATCH ? AND f.session_id != ?{like} ORDER BY bm25({table}), s.updated DESC LIMIT ?",
                (match, exclude or "", *(arg for _, arg in holds), limit),
            ).fetchall()
        except sqlite3.OperationalError:
            return []
        return [dict(r, snip=_snippet(r["content"], _marked_spans(r["marked"], r["content"])
                                      + [span for p in substrings for span in _occurrences(r["content"], p)]))
                for r in rows]


def _is_record(line: dict[str, Any]) -> bool:
    """A transcript line that is not a message: a `session:start` or `session:end` record."""
    return line.get("kind") in (SESSION_START, SESSION_END) and "role" not in line


INT64_MAX = 2**63 - 1  # SQLite's largest INTEGER: a bigger count or seq in a transcript is not one
# the times the index keeps: from the epoch to a day before year 9999 ends, so each is a local
# date in any time zone (`to_json`), a bigger or an earlier one in a transcript is not a time
_LATEST = 253_402_128_000.0  # 9999-12-30T00:00:00Z


def _is_seq(value: Any) -> bool:
    """A positive whole number SQLite can store (a message's seq, a token count)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= INT64_MAX


def _count(value: Any) -> int:
    return value if _is_seq(value) else 0


def _text(value: Any) -> str:
    """A transcript string as SQLite takes it (a lone surrogate, valid JSON, is not UTF-8); else ""."""
    if not isinstance(value, str):
        return ""
    return value.encode("utf-8", "replace").decode("utf-8")


def _when(value: Any) -> float | None:
    """A transcript `ts` as the index keeps it (seconds since the epoch), or None (also for a
    time out of range: year 1, year 9999 in a zone ahead of UTC)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
        stamp = (moment if moment.tzinfo else moment.astimezone()).timestamp()
    except (ValueError, OverflowError, OSError):
        return None
    return stamp if 0 <= stamp <= _LATEST else None


def _id_time(session_id: str) -> float | None:
    """When a session id (`YYYYMMDD-HHMMSS-xxxxxx`, local time) was made, or None."""
    try:
        stamp = datetime.strptime(session_id[:15], "%Y%m%d-%H%M%S").timestamp()
    except (ValueError, OverflowError, OSError):
        return None
    return stamp if 0 <= stamp <= _LATEST else None


def _why(exc: BaseException) -> str:
    """Why a transcript could not be re-indexed, in a line; not its path, which `unindexed` keys by
    session id (a line number stays)."""
    if isinstance(exc, KitError):
        return f"line {exc.line}: {exc.message}" if exc.line else exc.message
    return str(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"


def _last_seq(path: Path, lines: int = 16) -> int:
    """The `seq` of a transcript's last message line (0 for none among its last `lines` lines, or
    no transcript), read from the end of the file: `append` writes `seq` first, so the usual
    line is known by its first bytes."""
    import mmap
    import stat

    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return 0
    with handle:
        try:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or not info.st_size:
                return 0
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                end = len(data)
                for _ in range(lines):
                    if end <= 0:
                        break
                    start = data.rfind(b"\n", 0, end) + 1
                    head = _SEQ_HEAD.match(data[start:start + 40])
                    if head:
                        return min(int(head.group(1)), INT64_MAX)
                    try:
                        record = json.loads(data[start:end]) if data[start:end].strip() else None
                    except (ValueError, RecursionError):  # a torn line
                        record = None
                    if isinstance(record, dict) and not _is_record(record) and _is_seq(record.get("seq")):
                        return record["seq"]
                    end = start - 1
        except (OSError, ValueError):
            return 0
    return 0


_SEQ_HEAD = re.compile(rb'\{"seq": ([0-9]{1,19}), ')


# highlight() markers that cannot occur in message text, so a "[" or "…" the user wrote is kept as is
_HIT_OPEN, _HIT_CLOSE = "\x02", "\x03"
SNIPPET_CHARS = 120  # a message up to this long is shown whole; a longer one is cut to about this


def _marked_spans(marked: str, content: str) -> list[tuple[int, int]]:
    """The (start, end) of each match highlight() marked, as offsets into `content`."""
    spans: list[tuple[int, int]] = []
    plain: list[str] = []
    at = start = 0
    for ch in marked:
        if ch == _HIT_OPEN:
            start = at
        elif ch == _HIT_CLOSE:
            if at > start:
                spans.append((start, at))
        else:
            plain.append(ch)
            at += 1
    return spans if "".join(plain) == content else []


def _holds(part: str) -> tuple[str, str]:
    """The SQL test that a message holds `part` in any case, and its argument. SQLite's LIKE folds
    ASCII letters only ("ö" would miss "Ölaf"): other text is tested by `_contains`."""
    if part.isascii():
        return "f.content LIKE ? ESCAPE '\\'", f"%{_escape_like(part)}%"
    return "kit_contains(f.content, ?)", re.escape(part)  # escaped once, not once per row


def _contains(text: str | None, pattern: str) -> bool:
    """`kit_contains(text, pattern)` in SQL: the escaped part occurs in `text` in any case (as
    `_occurrences` finds it; `re` keeps the compiled pattern between rows)."""
    return text is not None and re.search(pattern, text, re.IGNORECASE) is not None


def _occurrences(text: str, query: str) -> list[tuple[int, int]]:
    """Where the scan's query occurs, in any case (as `_holds` finds it)."""
    return [m.span() for m in re.finditer(re.escape(query), text, re.IGNORECASE)]


def _snippet(text: str, spans: list[tuple[int, int]], width: int = SNIPPET_CHARS) -> str:
    """`text` with each match marked `[like this]`: whole when it is at most `width` characters,
    else about `width` characters around the part with the most matches, cut between words.
    "…" at an edge only where words were left out (not for a bare "?" or space)."""
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):  # overlapping matches ("de" and "deploy") as one
        if merged and a < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    spans = merged
    lo, hi = 0, len(text)
    if len(text) > width:
        # the window (starting a little before a match) that holds the most matches, the first
        # such; one pass, as the merged spans' starts and ends both increase
        anchor, best, j = (0, 0), 0, 0
        for i, (a, _) in enumerate(spans):
            j = max(j, i)
            while j < len(spans) and spans[j][1] <= max(0, a - width // 4) + width:
                j += 1
            if j - i > best or not best:
                anchor, best = spans[i], j - i
        lo = max(0, anchor[0] - width // 4)
        hi = min(len(text), lo + width)
        lo = max(0, min(lo, hi - width))
        lo, hi = _word_edges(text, lo, hi, anchor)
    if not any(c.isalnum() for c in text[:lo]):
        lo = 0
    if not any(c.isalnum() for c in text[hi:]):
        hi = len(text)
    out, at = [], lo
    for a, b in spans:
        a, b = max(a, lo), min(b, hi)
        if a >= b:  # outside the window
            continue
        out += [text[at:a], "[", text[a:b], "]"]
        at = b
    out.append(text[at:hi])
    return ("…" if lo else "") + "".join(out).strip() + ("…" if hi < len(text) else "")


def _word_edges(text: str, lo: int, hi: int, anchor: tuple[int, int]) -> tuple[int, int]:
    """The window [lo, hi) moved in to the nearest whitespace, so no word is cut in two, but
    never past the word holding the anchor match (and never more than a window's width out for
    one enormous "word", a URL or a hash)."""
    width = hi - lo
    if lo > 0 and not text[lo - 1].isspace():
        space = next((i for i in range(lo, anchor[0]) if text[i].isspace()), None)
        if space is not None:
            lo = space + 1
        else:  # the anchor's own word starts before lo: take it whole
            lo = max(max(text.rfind(c, 0, anchor[0]) for c in " \t\n\r") + 1, anchor[0] - width // 2, 0)
    if hi < len(text) and not text[hi].isspace():
        space = next((i for i in range(hi - 1, anchor[1] - 1, -1) if text[i].isspace()), None)
        if space is not None:
            hi = space
        else:  # the anchor's own word ends after hi
            ends = [e for e in (text.find(c, anchor[1]) for c in " \t\n\r") if e >= 0]
            hi = min(min(ends, default=len(text)), anchor[1] + width // 2, len(text))
    return lo, hi


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _like_prefix(text: str) -> str:
    return _escape_like(text) + "%"


MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024  # a session transcript bigger than this is refused, not read

MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def to_message(line: dict[str, Any]) -> dict[str, Any]:
    """A transcript line back to the chat message the model saw."""
    return {k: line[k] for k in MESSAGE_KEYS if k in line}


def apply_compaction_record(history: list[dict[str, Any]], record: dict[str, Any]) -> list[dict[str, Any]]:
    """Replay one compaction on a rebuilt history (see kit.agent.compaction); a record that does
    not make sense (an edited file) changes nothing."""
    if record.get("mode") == "summary":
        dropped = record.get("dropped", 0)
        if isinstance(dropped, bool) or not isinstance(dropped, int) or dropped < 0:
            return history
        return [to_message(record)] + history[dropped:]
    if record.get("mode") == "placeholders":
        replaced = record.get("replaced") or {}
        if not isinstance(replaced, dict):
            return history
        return [
            {**m, "content": replaced[m["tool_call_id"]]}
            if m.get("role") == "tool" and m.get("tool_call_id") in replaced else m
            for m in history
        ]
    return history
