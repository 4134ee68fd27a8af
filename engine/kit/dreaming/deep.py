"""Deep sleep (§8), as a plan and its application.

`plan()` decides, writing nothing: which entries the user deleted since the last dream (demoted),
how every candidate ranks and which gates it fails, and for each that passes, in rank order, what
becomes of it — promoted, promoted in place of an older value (superseded), queued "to verify"
(it contradicts MEMORY.md without saying it replaces it), stale (a newer value exists), gone
(its lines are no longer in the note), a duplicate, or over today's limit. `apply()` (in the
runner) writes the plan: MEMORY.md through `writer.write_memory`, the archive, state and report.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import Any

from kit.dreaming import claims, managed
from kit.dreaming.candidates import Candidate
from kit.dreaming.embed import similarity_matrix
from kit.dreaming.junk import junk_rule
from kit.dreaming.ranking import DeepSettings, Ranked, rank
from kit.dreaming.store import DEMOTED, PhaseStats, Promotion, VerifyItem
from kit.memory.daily import note_date
from kit.memory.notes import ARCHIVE_FILE as ARCHIVE_FILE  # the files Deep writes
from kit.memory.notes import MEMORY_FILE as MEMORY_FILE
from kit.memory.recall import claim_hash, normalise_claim
from kit.wording import plural

SEMANTIC_DUPLICATE = 0.88
LOOK_AHEAD = 6  # candidates whose encoding starts while one is decided (the helper threads: 2)
NEWER_LINES = 4  # newer note lines embedded per candidate at most (the most alike by subject words)
ARCHIVE_HEADER = (
    "# Retired promoted memories\n\n"
    "Entries Kit's dreaming moved out of MEMORY.md: when its promoted section grew over\n"
    "`dreaming.memory_max_chars` (`retired=`), or when a newer value replaced them (`superseded_by=`).\n"
    "Still searchable with `kit memory search`; no longer in the prompt.\n"
)
ACTIONS = ("promoted", "superseded", "to_verify", "stale", "gone", "duplicate", "over_limit")
# each action in human output (`--json` keeps the names); "promoted" reads "would promote" in a preview
_ACTION_WORDS = {"promoted": "promoted", "superseded": "supersedes an older value", "to_verify": "to verify",
                 "stale": "stale", "gone": "gone from its note", "duplicate": "duplicate",
                 "over_limit": "over today's limit"}


def action_words(action: str, *, applied: bool = True) -> str:
    """What Deep's decision means in human output (`kit memory promote`, `kit memory explain`)."""
    if action == "promoted" and not applied:
        return "would promote"
    return _ACTION_WORDS.get(action, action)


@dataclass(frozen=True)
class Live:
    """Where a candidate's claim is in its note now."""

    start_line: int
    end_line: int
    text: str
    path: str = ""

    @property
    def key(self) -> str:
        return f"{self.path}:{self.start_line}:{self.end_line}"


@dataclass(frozen=True)
class Existing:
    """Something MEMORY.md already says: a promoted entry, or (entry None) a line of the user's own."""

    text: str
    entry: managed.Entry | None
    day: date | None  # the date of the note it came from

    @property
    def key(self) -> str:
        return self.entry.key if self.entry else ""

    @property
    def claim(self) -> str:
        return self.entry.claim if self.entry else claim_hash(self.text)


@dataclass(frozen=True)
class Decision:
    ranked: Ranked
    action: str  # one of ACTIONS
    detail: str
    live: Live | None = None
    old: Existing | None = None  # superseded, to_verify, stale: what it replaces or contradicts

    @property
    def writes(self) -> bool:
        return self.action in ("promoted", "superseded")

    @property
    def held_back(self) -> bool:
        """Passed the gates and Deep kept it out (stale, duplicate, over today's limit …); a
        contradiction waiting in `kit memory verify` is its own kind, not held back."""
        return not self.writes and self.action != "to_verify"

    def to_json(self) -> dict:
        return {"key": self.ranked.cand.key, "action": self.action, "detail": self.detail}


@dataclass(frozen=True)
class DeepPlan:
    """What tonight's Deep will do, and why."""

    day: date
    ranked: tuple[Ranked, ...]
    decisions: tuple[Decision, ...]
    demoted: tuple[Promotion, ...]  # entries the user deleted since the last dream
    promotions: tuple[Promotion, ...]  # the promotion rows as of the plan (demotions applied)
    limit: int  # promotions left for today
    snippets: tuple[tuple[Promotion, str], ...] = field(default=())  # demoted rows that get their text

    @property
    def chosen(self) -> list[Decision]:
        return [d for d in self.decisions if d.writes]

    def entries(self) -> list[managed.Entry]:
        return [entry_for(d, self.day) for d in self.chosen]

    @property
    def replaced(self) -> list[managed.Entry]:
        """Promoted entries a newer value supersedes tonight."""
        return [d.old.entry for d in self.chosen if d.action == "superseded" and d.old and d.old.entry]

    def verify_items(self) -> list[VerifyItem]:
        out = []
        for d in self.decisions:
            if d.action != "to_verify" or d.live is None or d.old is None:
                continue
            c, day = d.ranked.cand, self.day.isoformat()
            out.append(VerifyItem(0, c.claim, d.live.key, managed.one_line(d.live.text), d.old.key, d.old.claim,
                                  d.old.text, d.detail, round(d.ranked.score.total, 6), c.recall_count,
                                  len(c.credited_queries), c.days[-1], day, "pending", day))
        return out


# --------------------------------------------------------------------------- rehydration


def _matches(window: str, cand: Candidate) -> bool:
    if claim_hash(window) in cand.claims or claim_hash(window) == cand.claim:
        return True
    # snippets are cut to memory.search.snippet_chars: a cut snippet still identifies its lines
    want = normalise_claim(cand.snippet).rstrip("…. ")
    if len(want) >= 12 and want in normalise_claim(window):
        return True
    return claims.same_claim(cand.snippet, window)


def rehydrate(cand: Candidate, notes: NoteLines) -> Live | None:
    """Re-read the notes (each file once per plan: `notes`): the claim where it was last recalled,
    else anywhere in that note (nearest first, same line count: lines moved), else in the other
    notes it was recalled from; None when it is gone (deleted, rewritten with another value,
    unreadable)."""
    for path, start, end in cand.locations or ((cand.path, cand.start_line, cand.end_line),):
        lines = notes.file_lines(path)
        if lines is None:  # missing, unreadable, not UTF-8 or escaping the workspace: not promotable tonight
            continue
        n = end - start + 1
        for s in sorted(range(1, max(1, len(lines) - n + 2)), key=lambda s: (abs(s - start), s)):
            window = "\n".join(lines[s - 1 : s - 1 + n])
            if window.strip() and _matches(window, cand):
                return Live(s, s + n - 1, window, path)
    return None


def _file_lines(root: Path, rel: str) -> list[str] | None:
    from kit.errors import KitError
    from kit.fsutil import read_text, safe_join

    try:
        return read_text(safe_join(root, rel), display=rel).split("\n")
    except (OSError, KitError):
        return None


# --------------------------------------------------------------------------- what MEMORY.md says


def existing_facts(memory_text: str) -> list[Existing]:
    parsed = managed.parse(memory_text)
    out = [Existing(e.text, e, note_date(e.key.rsplit(":", 2)[0]) if e.key.count(":") >= 2 else None)
           for e in parsed.entries if e.text]
    out += [Existing(line, None, None) for line in managed.user_lines(memory_text)]
    return out


class NoteLine:
    """One claim of a daily note; its subject words and values are worked out when first asked
    (in the plan's `claims.Facts`: a line may be a candidate's or MEMORY.md's text too)."""

    def __init__(self, day: date, path: str, text: str, facts: claims.Facts):
        self.day, self.path, self.text, self.facts = day, path, text, facts
        self.words = facts.words(text)

    @property
    def subject(self) -> frozenset[str]:
        return self.facts.subject(self.text)  # the plan's memo: worked out once per text

    @property
    def values(self) -> claims.Values:
        return self.facts.values(self.text)

    @property
    def states_change(self) -> bool:
        return self.facts.states_change(self.text)

    @cached_property
    def junk(self) -> bool:
        return junk_rule(self.text) is not None


class NoteLines:
    """The claims (top-level list items and paragraph lines) of the daily notes, read once per plan;
    `facts`: what every text the plan compares states, worked out once (the plan's memo)."""

    def __init__(self, root: Path, facts: claims.Facts | None = None):
        self.root = root
        self.facts = facts or claims.Facts()
        self._lines: list[NoteLine] | None = None
        # subject word → the lines about it, and → those of them that say they changed (indexes)
        self._by_subject: dict[str, list[int]] | None = None
        self._changing: dict[str, list[int]] = {}
        self._subjects: list[frozenset[str]] = []  # each line's subject words, by index
        self._newer: dict[tuple[str, date], list[NoteLine]] = {}  # newer_lines, once per text and day
        self._files: dict[str, list[str] | None] = {}  # rel path → its lines (rehydrate), None: unreadable

    def file_lines(self, rel: str) -> list[str] | None:
        """The lines of a workspace file, read once per plan (a night rehydrates a few hundred
        candidates from a few dozen notes; each read resolved the whole path again), None when it
        cannot be read or leads out of the workspace."""
        if rel not in self._files:
            self._files[rel] = _file_lines(self.root, rel)
        return self._files[rel]

    def clear_candidates(self, subject: frozenset[str], words: frozenset[str], day: date) -> list[NoteLine]:
        """The lines of the notes dated after `day` that share at least two of `words` (`shared`: one
        for a text whose subject is one word — "Standup is at 9:30" and "Standup moves to 10:00"
        share only "standup") and that can clearly update a text about `subject` (`newer_lines`): a
        subject Jaccard ≥ CLEAR_SUBJECT,
        or a line that says it changed with a subject word in common. In note order, junk included
        (callers check the few they keep). A superset, found by subject word: Jaccard ≥ t needs
        `need` = ⌈t·|subject|⌉ shared words, so a line with none of the |subject| − need + 1 rarest
        has too few; a hundred texts or more ask, and most note lines share a word or two."""
        if not subject:
            return []
        if self._lines is None:
            self._lines = self._read()
        if self._by_subject is None:
            self._by_subject = {}
            self._subjects = [line.subject for line in self._lines]
            for i, line in enumerate(self._lines):
                change = line.states_change
                for w in self._subjects[i]:
                    self._by_subject.setdefault(w, []).append(i)
                    if change:
                        self._changing.setdefault(w, []).append(i)
        by_subject = self._by_subject
        need = max(1, math.ceil(claims.CLEAR_SUBJECT * len(subject) - 1e-9))
        rarest = sorted(subject, key=lambda w: (len(by_subject.get(w, ())), w))[: len(subject) - need + 1]
        lines, subjects = self._lines, self._subjects
        picked = {i for w in rarest for i in by_subject.get(w, ()) if len(subject & subjects[i]) >= need}
        picked.update(i for w in subject for i in self._changing.get(w, ()))
        least = shared(subject)
        return [lines[i] for i in sorted(picked) if lines[i].day > day and len(words & lines[i].words) >= least]

    def _read(self) -> list[NoteLine]:
        out = []
        folder = self.root / "memory"
        for path in sorted(folder.glob("*.md")) if folder.is_dir() else ():
            rel = f"memory/{path.name}"
            day = note_date(rel)
            if day is None:
                continue
            # the read rehydration shares; a note linked from outside the workspace is not read
            for line in self.file_lines(rel) or ():
                stripped = line.strip()
                if not stripped or stripped.startswith(("#", "<!--")) or line.startswith((" ", "\t")):
                    continue
                out.append(NoteLine(day, rel, managed.one_line(stripped), self.facts))
        return out


def _clear(rel: claims.Relation, new_day: date | None, old_day: date | None) -> bool:
    """A clear update: the line says it changed, or it is newer and differs only in numbers,
    times, dates, days or money on the same subject."""
    if rel.states_change:
        return True
    newer = new_day is not None and old_day is not None and new_day > old_day
    return newer and rel.only_values and rel.subject >= claims.CLEAR_SUBJECT


def _best_update(text: str, others: Sequence[Existing], sims,
                 facts: claims.Facts) -> tuple[Existing, claims.Relation] | None:
    best = None
    for other, sim in zip(others, sims, strict=True):
        if float(sim) < claims.CHANGE_SIMILARITY and claims.jaccard(facts.subject(other.text),
                                                                      facts.subject(text)) < claims.UPDATE_SUBJECT:
            continue
        rel = claims.relation(other.text, text, float(sim), facts)
        if rel.kind == "update" and (best is None or rel.similarity > best[1].similarity):
            best = (other, rel)
    return best


def shared(subject: frozenset[str]) -> int:
    """How many words a newer note line must share with a text about `subject` to be compared with
    it: two, or one when the subject is a single word (a short line shares nothing more)."""
    return min(2, len(subject))


def newer_lines(text: str, day: date | None, notes: NoteLines) -> list[NoteLine]:
    """The newer note lines that could clearly update `text` (lexically: the same subject words,
    Jaccard ≥ CLEAR_SUBJECT, with a changed number, time, date, day or amount — or a line that says
    it changed and shares a subject word), not junk, the NEWER_LINES most alike."""
    if day is None:
        return []
    if (text, day) not in notes._newer:
        notes._newer[(text, day)] = _newer_lines(text, day, notes)
    return notes._newer[(text, day)]


def _newer_lines(text: str, day: date, notes: NoteLines) -> list[NoteLine]:
    facts = notes.facts
    mine, mine_values = facts.subject(text), facts.values(text)
    mine_words = facts.words(text) - claims.STOP_WORDS
    found = []
    for line in notes.clear_candidates(mine, mine_words, day):  # by subject word first: cheap
        if not (mine & line.subject):
            continue
        subj = claims.jaccard(mine, line.subject)
        if subj < claims.CLEAR_SUBJECT and not line.states_change:  # kept below in neither case
            continue
        changed = claims.conflicts(mine_values, line.values)
        if not changed:
            continue
        values_only = any(kind not in ("name", "negation", "id") for kind, _, _ in changed)
        if (subj >= claims.CLEAR_SUBJECT and values_only) or line.states_change:
            found.append((-subj, line.day, line.path, line.text, line))
    # junk last, and only until NEWER_LINES are kept: the costliest test (a stable sort, so the
    # same lines as filtering first)
    kept: list[NoteLine] = []
    for row in sorted(found, key=lambda r: r[:4]):
        if len(kept) == NEWER_LINES:
            break
        if not row[-1].junk:
            kept.append(row[-1])
    return kept


def newer_value(text: str, day: date | None, notes: NoteLines, embedder: Any | None) -> tuple[str, str] | None:
    """(path, line) of a newer note line that clearly updates `text`'s value, or None."""
    later = newer_lines(text, day, notes)
    if not later:
        return None
    sims = similarity_matrix(embedder, [text], [line.text for line in later])[0]
    for line, sim in zip(later, sims, strict=True):
        rel = claims.relation(text, line.text, float(sim), notes.facts)
        if rel.kind == "update" and _clear(rel, line.day, day):
            return line.path, line.text
    return None


# --------------------------------------------------------------------------- the plan


def block_demoted_twins(ranked: Sequence[Ranked], demoted_texts: Sequence[str], embedder: Any | None) -> list[Ranked]:
    """Fail `not_demoted` for a passing candidate semantically equal (the MEMORY.md dedupe test,
    cosine ≥ SEMANTIC_DUPLICATE) to an entry the user removed: a paraphrase of a deleted fact is
    not promoted either. Only candidates that passed every gate are embedded."""
    from kit.dreaming.embed import CachedEmbedder

    texts = [t for t in dict.fromkeys(t.strip() for t in demoted_texts) if t]
    passing = [r for r in ranked if r.passed]
    if not texts or not passing:
        return list(ranked)
    if embedder is not None and not isinstance(embedder, CachedEmbedder):
        embedder = CachedEmbedder(embedder)
    sims = similarity_matrix(embedder, [managed.one_line(r.cand.snippet) for r in passing], texts)
    twins = {r.cand.id for r, row in zip(passing, sims, strict=True) if float(row.max()) >= SEMANTIC_DUPLICATE}
    return [replace(r, gates={**r.gates, "not_demoted": False}) if r.cand.id in twins else r for r in ranked]


def unrecorded(memory_text: str, promos: Sequence[Promotion], today: date) -> list[Promotion]:
    """MEMORY.md's promoted entries that state.db has no active row for, as active rows read off
    their markers. A dream swaps MEMORY.md in before it records the promotions; one stopped in
    between (Ctrl-C, kill, power) left entries Kit no longer knew as its own, so deleting one was
    no demotion and the next dream promoted it again. The same holds for entries an import brought,
    a new `.kit/`, or an entry the user put back (a demoted row becomes active again). The file is
    the truth: they are recorded."""
    active = {(p.key, p.claim) for p in promos if p.status == "active"}
    found: dict[tuple[str, str], Promotion] = {}
    for e in managed.parse(memory_text).entries:
        if not (e.body and e.key and e.claim) or (e.key, e.claim) in active:
            continue
        # a marker without a real date: the oldest day, never "today" (which would count against
        # tonight's limit and make the entry look freshly recalled to the size cap)
        day = e.attr("date") if note_date(f"memory/{e.attr('date')}.md") else "0000-00-00"
        found.setdefault((e.key, e.claim), Promotion(
            key=e.key, claim=e.claim, snippet=e.text, score=_number(e.attr("score"), float),
            recalls=_number(e.attr("recalls"), int), queries=_number(e.attr("queries"), int),
            promoted_day=day, last_recall_day=day, status="active", status_day=today.isoformat(),
            note="recorded from its MEMORY.md marker"))
    return list(found.values())


def archived(memory_text: str, archive_text: str, promos: Sequence[Promotion]) -> list[tuple[Promotion, str, str, str]]:
    """Active rows whose entry is gone from MEMORY.md into the archive (`retired=`, `superseded_by=`)
    on or after its promotion, each as (row, status, day, note). A dream writes the archive before
    it records the exits; one stopped in between left the rows active, and the next dream took the
    missing entries for the user's deletions: demoted, blocked for good, where they were only
    retired for room or replaced. The archive is the truth for them."""
    present = {(e.key, e.claim) for e in managed.parse(memory_text).entries if e.body}
    active = {(p.key, p.claim): p for p in promos if p.status == "active" and (p.key, p.claim) not in present}
    if not active:
        return []
    found: dict[tuple[str, str], tuple[Promotion, str, str, str]] = {}
    for attrs in managed.markers(archive_text):
        p = active.get((attrs.get("key", ""), attrs.get("claim", "")))
        if p is None:
            continue
        if attrs.get("superseded_by"):
            how = ("superseded", attrs.get("superseded", ""), f"superseded by {attrs['superseded_by']}")
        else:
            how = ("retired", attrs.get("retired", ""), "")
        # an exit before the row's promotion is an older life of the line (promoted again since):
        # its entry missing now is the user's deletion
        if note_date(f"memory/{how[1]}.md") and how[1] >= p.promoted_day:
            found[(p.key, p.claim)] = (p, *how)  # the archive's last word on it
    return list(found.values())


def _number(text: str, kind: Callable[[str], Any]) -> Any:
    try:
        value = kind(text)
    except ValueError:
        return kind("0")
    return value if math.isfinite(value) else kind("0")


def demotions(memory_text: str, promos: Sequence[Promotion], cands: Sequence[Candidate],
              today: date) -> tuple[list[Promotion], list[Promotion], list[tuple[Promotion, str]]]:
    """User edits win: an active entry missing from MEMORY.md was deleted by the user. Returns the
    promotion rows with those demoted, the demoted rows, and the text each keeps (so paraphrases
    of it stay blocked) when the row had none."""
    present = {(e.key, e.claim) for e in managed.parse(memory_text).entries if e.body}
    gone = [p for p in promos if p.status == "active" and (p.key, p.claim) not in present]
    if not gone:
        return list(promos), [], []
    ids = {(p.key, p.claim) for p in gone}
    snippets = {}
    for c in cands:
        for p in gone:
            if not p.snippet.strip() and p.claim in c.claims | {c.claim}:
                snippets[(p.key, p.claim)] = managed.one_line(c.first_snippet if p.claim == c.claim else c.snippet)
    rows, fills = [], []
    for p in promos:
        if (p.key, p.claim) in ids:
            q = replace(p, status="demoted", status_day=today.isoformat(),
                        snippet=snippets.get((p.key, p.claim), p.snippet))
            if q.snippet != p.snippet:
                fills.append((q, q.snippet))
            rows.append(q)
        else:
            rows.append(p)
    return rows, [r for r in rows if (r.key, r.claim) in ids], fills


def plan(
    cands: Sequence[Candidate],
    *,
    today: date,
    settings: DeepSettings,
    memory_text: str,
    promotions: Sequence[Promotion],
    light: Mapping[str, PhaseStats],
    rem: Mapping[str, PhaseStats],
    root: Path,
    embedder: Any | None,
    pending_verify: Sequence[VerifyItem] = (),
    kept_both: Sequence[VerifyItem] = (),
) -> DeepPlan:
    """Tonight's Deep, decided and written nowhere (see the module docstring)."""
    from kit.dreaming.embed import CachedEmbedder

    if embedder is not None and not isinstance(embedder, CachedEmbedder):
        embedder = CachedEmbedder(embedder)
    promos, demoted, fills = demotions(memory_text, promotions, cands, today)
    ranked = rank(cands, today=today, settings=settings, light=light, rem=rem, promotions=promos)
    ranked = block_demoted_twins(ranked, [p.snippet for p in promos if p.status in DEMOTED], embedder)
    used_today = sum(1 for p in promos if p.promoted_day == today.isoformat())
    limit = max(0, settings.limit - used_today)
    # the setting, not what is left of it ("over today's limit of 0" read as a limit of 0)
    over = f"over today's limit of {plural(settings.limit, 'promotion')}, set by dreaming.deep.limit" + (
        f"; {used_today} promoted earlier today" if used_today else "")
    decisions = decide(ranked, root=root, memory_text=memory_text, limit=limit, embedder=embedder,
                       queued={v.claim for v in pending_verify}, both={(v.claim, v.old_claim) for v in kept_both},
                       over_limit=over)
    return DeepPlan(today, tuple(ranked), tuple(decisions), tuple(demoted), tuple(promos), limit, tuple(fills))


EVIDENCE_GATES = frozenset({"min_score", "min_recall_count", "min_recall_days", "min_unique_queries"})


def may_update(r: Ranked) -> bool:
    """Blocked only by how little it was recalled yet, and credited at least once: such a line may
    still replace the value of a fact MEMORY.md holds, when it clearly updates it. The fact earned
    its place already; only its value changed ("standup moves to 10:00"), and the old value must
    not ride in every prompt until the new one is recalled as often."""
    return (not r.passed and bool(r.cand.credited_days)
            and all(ok for name, ok in r.gates.items() if name not in EVIDENCE_GATES))


def decide(ranked: Sequence[Ranked], *, root: Path, memory_text: str, limit: int, embedder: Any | None,
           over_limit: str, queued: set[str] = frozenset(),
           both: set[tuple[str, str]] = frozenset()) -> list[Decision]:
    """In rank order, what becomes of each candidate that passed every gate.

    `both`: (claim, old claim) pairs the user called two true facts (`kit memory verify keep-both`):
    the candidate is not compared with that line at all — not an update of it, nor its duplicate.

    Candidates past today's limit are not rehydrated or embedded (but for the LOOK_AHEAD whose
    encoding had started, never stored): the work stays proportional to the limit, not to the
    size of the recall log. `over_limit`: the detail of a candidate past it (`plan` names the setting).
    """
    from kit.dreaming.embed import CachedEmbedder

    existing = existing_facts(memory_text)
    notes = NoteLines(root)
    decisions: list[Decision] = []
    written = 0
    passing = [r for r in ranked if r.passed]
    lives: dict[str, Live | None] = {}
    if embedder is not None and limit > 0:
        # one batch for the likely winners (and what they are compared with) instead of one call each
        for r in passing[: limit + 10]:
            lives[r.cand.id] = rehydrate(r.cand, notes)
        texts = [(managed.one_line(v.text), note_date(v.path)) for v in lives.values() if v]
        newer = [line.text for text, day in texts for line in newer_lines(text, day, notes)]
        embedder.encode(list(dict.fromkeys([e.text for e in existing] + [t for t, _ in texts] + newer)))
    order = passing + [r for r in ranked if may_update(r)]
    looked: set[str] = set()  # the candidates whose encoding `_look_ahead` started
    ahead = isinstance(embedder, CachedEmbedder)  # plan() gives one
    with embedder.prefetching() if ahead else nullcontext():
        for i, r in enumerate(order):
            if ahead and written < limit:
                coming = [c for c in order[i + 1 : i + 1 + LOOK_AHEAD] if c.cand.id not in looked]
                looked.update(c.cand.id for c in coming)
                _look_ahead(coming, notes, lives, embedder, queued)
            written = _decide_next(r, existing=existing, notes=notes, embedder=embedder, lives=lives, over=over_limit,
                                   decisions=decisions, written=written, limit=limit, queued=queued, both=both)
    return decisions


def _look_ahead(coming: Sequence[Ranked], notes: NoteLines, lives: dict[str, Live | None],
                embedder: Any, queued: set[str]) -> None:
    """Start encoding what the next candidates' decisions will encode (their line and its newer
    lines: `_decide_one`), while this one is decided; the model calls stay the ones made without
    it (see `CachedEmbedder.prefetch`). At most LOOK_AHEAD candidates ahead: past the limit
    nothing is decided, so little is encoded for nothing."""
    for r in coming:
        if r.passed and r.cand.claim in queued:
            continue
        if r.cand.id not in lives:
            lives[r.cand.id] = rehydrate(r.cand, notes)
        live = lives[r.cand.id]
        if live is not None:
            text = managed.one_line(live.text)
            embedder.prefetch([text] + [line.text for line in newer_lines(text, note_date(live.path), notes)])


def _decide_next(r: Ranked, *, over: str, existing: list[Existing], notes: NoteLines, embedder: Any | None,
                 lives: dict[str, Live | None], decisions: list[Decision], written: int, limit: int,
                 queued: set[str], both: set[tuple[str, str]]) -> int:
    """Decide `r` (appended to `decisions`); returns how many were written so far."""
    if not r.passed:  # may only replace the value of a fact MEMORY.md holds (see may_update)
        if written >= limit:
            return written
        live = lives[r.cand.id] if r.cand.id in lives else rehydrate(r.cand, notes)
        d = _decide_one(r, live, _apart(r, existing, both), notes, embedder) if live else None
        if d is None or d.action != "superseded":
            return written
        d = replace(d, detail=f"{d.detail}; an update of a promoted fact needs one credited recall")
        decisions.append(d)
        _accept(d, existing, decisions)
        return written + 1
    if written >= limit:
        decisions.append(Decision(r, "over_limit", over))
        return written
    if r.cand.claim in queued:
        decisions.append(Decision(r, "to_verify", "waiting in `kit memory verify`"))
        return written
    live = lives[r.cand.id] if r.cand.id in lives else rehydrate(r.cand, notes)
    if live is None:
        decisions.append(Decision(r, "gone", "its lines are no longer in the note"))
        return written
    d = _decide_one(r, live, _apart(r, existing, both), notes, embedder)
    decisions.append(d)
    if d.writes:
        _accept(d, existing, decisions)
        return written + 1
    return written


def _apart(r: Ranked, existing: list[Existing], both: set[tuple[str, str]]) -> list[Existing]:
    """What MEMORY.md says, less the lines the user said this candidate does not contradict."""
    if not both:
        return existing
    return [e for e in existing if (r.cand.claim, e.claim) not in both]


def _accept(d: Decision, existing: list[Existing], decisions: list[Decision]) -> None:
    """Tonight's promotion joins what MEMORY.md says (as the entry it will be), for the candidates
    after it; one it supersedes leaves. A promotion of tonight that a later one supersedes is
    turned into `stale` instead (the older value is not written at all)."""
    existing.append(Existing(managed.one_line(d.live.text), entry_for(d, date.min), note_date(d.live.path)))
    if d.action != "superseded" or d.old is None:
        return
    if d.old in existing:
        existing.remove(d.old)
    for i, earlier in enumerate(decisions):
        if earlier.writes and earlier is not d and earlier.live is not None and d.old.entry is not None \
                and d.old.entry.claim == earlier.ranked.cand.claim:
            decisions[i] = replace(earlier, action="stale", detail=f"a newer value tonight: {d.live.key}")


def _decide_one(r: Ranked, live: Live, existing: list[Existing], notes: NoteLines, embedder: Any | None) -> Decision:
    text, day = managed.one_line(live.text), note_date(live.path)
    newer = newer_value(text, day, notes, embedder)
    if newer is not None:
        return Decision(r, "stale", f"a newer value is in {newer[0]}: {managed.one_line(newer[1], 80)}", live)
    sims = similarity_matrix(embedder, [text], [e.text for e in existing])[0] if existing else []
    update = _best_update(text, existing, sims, notes.facts)
    if update is not None:
        old, rel = update
        what = f"{rel.describe()} (was: {managed.one_line(old.text, 80)})"
        if old.entry is None:
            return Decision(r, "to_verify", f"contradicts a line of yours in MEMORY.md: {what}", live, old)
        if old.day is not None and day is not None and day < old.day:
            return Decision(r, "stale", f"MEMORY.md has a newer value: {managed.one_line(old.text, 80)}", live, old)
        if _clear(rel, day, old.day):
            return Decision(r, "superseded", f"replaces an older value: {what}", live, old)
        why = "the note does not say it changed" if day != old.day else "both notes are from the same day"
        return Decision(r, "to_verify", f"contradicts MEMORY.md and {why}: {what}", live, old)
    if len(sims) and float(max(sims)) >= SEMANTIC_DUPLICATE:
        twin = existing[int(sims.argmax())].text
        return Decision(r, "duplicate", f"semantically equal to a MEMORY.md entry: {twin[:80]}", live)
    for other, sim in zip(existing, sims, strict=True):
        if claims.restates(other.text, text, float(sim), notes.facts):
            return Decision(r, "duplicate", f"restates a MEMORY.md entry: {managed.one_line(other.text, 80)}", live)
    return Decision(r, "promoted", "passed every gate", live)


def entry_for(d: Decision, today: date) -> managed.Entry:
    """The managed entry for a promotion: its key is where the line is *now*."""
    c, live = d.ranked.cand, d.live
    assert live is not None
    extra = (("supersedes", d.old.key or "MEMORY.md"),) if d.action == "superseded" and d.old else ()
    return managed.make_entry(
        key=live.key if live.path else c.key, claim=c.claim, score=d.ranked.score.total, recalls=c.recall_count,
        queries=c.unique_queries, day=today.isoformat(), text=live.text, extra=extra,
    )


def choose_retirements(text: str, cap: int, last_recall: Callable[[managed.Entry], tuple[str, float]]) -> list[managed.Entry]:
    """Entries to retire, oldest last recall first (ties: lowest score), until the section fits."""
    p = managed.parse(text)
    size = len(p.section_text())
    if cap <= 0 or size <= cap:
        return []
    order = sorted(p.entries, key=lambda e: (*last_recall(e), e.key, e.claim))
    out: list[managed.Entry] = []
    blocks = list(p.blocks)
    for e in order:
        if size <= cap:
            break
        blocks.remove(e)
        out.append(e)
        size = len(managed.render_section(blocks))
    return out


def archive_text(current: str | None, retired: Sequence[managed.Entry], today: date,
                 superseded: Mapping[tuple[str, str], str] | None = None) -> str:
    """The archive with `retired` appended; an entry in `superseded` ((key, claim) → the key of
    its replacement) gets `superseded_by=` instead of `retired=`. One the archive holds already,
    marked today, is not appended again (a dream run again after one stopped between its writes)."""
    text = current if current and current.strip() else ARCHIVE_HEADER
    text = text.rstrip("\n") + "\n"
    superseded = superseded or {}
    day = today.isoformat()
    held = {(m.get("key"), m.get("claim")) for m in managed.markers(text) if day in (m.get("retired"), m.get("superseded"))}
    for e in retired:
        if (e.key, e.claim) in held:
            continue
        by = superseded.get((e.key, e.claim))
        mark = (("superseded_by", by), ("superseded", day)) if by else (("retired", day),)
        attrs = tuple((k, v) for k, v in e.attrs if k not in ("retired", "superseded", "superseded_by")) + mark
        text += "\n" + "\n".join(managed.Entry(attrs, e.body).render()) + "\n"
    return text
