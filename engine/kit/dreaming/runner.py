"""`run_dream(ws)`: the facade. Lock, read the recall log, run the phases, write, report, commit."""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol, TypeVar

from kit import clock
from kit.core import WorkspaceCore
from kit.dreaming import checkpoint, managed, reports, store
from kit.dreaming import deep as deep_phase
from kit.dreaming import events as dream_events
from kit.dreaming.candidates import Candidate
from kit.dreaming.light import LightResult, run_light
from kit.dreaming.ranking import DeepSettings, Ranked
from kit.dreaming.rem import RemResult, run_rem
from kit.dreaming.verdicts import verdicts_for
from kit.dreaming.writer import Files, planned_retirements, write_memory
from kit.errors import BusyError
from kit.fsutil import LockFile
from kit.gcpause import gc_paused
from kit.memory.recall import ensure_schema as ensure_recall_schema
from kit.memory.recall import normalise_claim
from kit.paths import CONFIG_FILE
from kit.problems import Problem
from kit.progress import ProgressCallback, Status, report
from kit.wording import plural

PHASES = ("light", "rem", "deep")
LOCK_REL = ".kit/locks/dream.lock"
DEFAULT_LOCK_WAIT = 10.0
VERIFY_COMMAND = "kit memory verify"  # where contradictions queued "to verify" are reviewed


@dataclass(frozen=True)
class DreamResult:
    now: str
    day: date
    applied: bool
    phases: tuple[str, ...]
    light: LightResult | None
    rem: RemResult | None
    ranked: tuple[Ranked, ...]
    decisions: tuple[deep_phase.Decision, ...]
    promoted: tuple[str, ...]
    retired: tuple[str, ...]
    demoted: tuple[str, ...]
    changed: tuple[str, ...]
    diary: bool
    similarity: str  # embeddings | lexical
    git: dict[str, Any] | None = None
    notes: tuple[str, ...] = field(default=())
    superseded: tuple[str, ...] = field(default=())  # keys of the entries newer values replaced
    to_verify: tuple[store.VerifyItem, ...] = field(default=())  # queued tonight

    def to_json(self) -> dict:
        notes = {d.ranked.cand.id: d for d in self.decisions}
        cands = []
        for r in self.ranked:
            item = r.to_json()
            d = notes.get(r.cand.id)
            item["decision"] = d.action if d else None
            item["detail"] = d.detail if d else None
            cands.append(item)
        return {
            "now": self.now,
            "day": self.day.isoformat(),
            "applied": self.applied,
            "phases": list(self.phases),
            "similarity": self.similarity,
            "light": ({**self.light.to_json(), "staged_count": len(self.light.staged)} if self.light else None),
            "rem": self.rem.to_json() if self.rem else None,
            "deep": None if "deep" not in self.phases else {
                "candidates": cands,
                "promoted": list(self.promoted),
                "retired": list(self.retired),
                "demoted": list(self.demoted),
                "superseded": list(self.superseded),
                "to_verify": [v.to_json() for v in self.to_verify],
                # what the human line says: how many were queued tonight and where to review them
                "to_verify_count": len(self.to_verify),
                "review": VERIFY_COMMAND if self.to_verify else None,
            },
            "changed": list(self.changed),
            "diary": self.diary,
            "git": self.git,
            "notes": list(self.notes),
        }


def normalise_phases(phases: Iterable[str] | str) -> tuple[str, ...]:
    wanted = [phases] if isinstance(phases, str) else list(phases)
    if "all" in wanted:
        return PHASES
    bad = [p for p in wanted if p not in PHASES]
    if bad:
        from kit.errors import KitError

        raise KitError(f"unknown dream phase {bad[0]!r}; use light, rem, deep or all")
    return tuple(p for p in PHASES if p in wanted)


def _lock_wait(value: float | None) -> float:
    if value is not None:
        return value
    env = os.environ.get("KIT_DREAM_LOCK_WAIT")
    return float(env) if env else DEFAULT_LOCK_WAIT


def acquire_lock(ws: WorkspaceCore, wait: float | None = None, *, progress: ProgressCallback | None = None) -> LockFile:
    lock = LockFile(ws.kit_dir / "locks" / "dream.lock")
    seconds = _lock_wait(wait)
    if lock.try_acquire():
        return lock
    if progress is not None:
        info = lock.holder()
        who = f"pid {info[0]}" if info else "another process"
        report(progress, Status(f"waiting up to {seconds:g} s for the dream lock ({who})…", task="dream"))
    try:
        lock.acquire(wait=seconds, what="dream lock")
    except BusyError:
        info = lock.holder()
        who = f"pid {info[0]}" if info else "another process"
        raise BusyError(
            f"another dream is running in this workspace ({who} holds {LOCK_REL}); "
            f"waited {seconds:g} s. Try again when it has finished."
        ) from None
    return lock


class _CanClose(Protocol):
    def close(self) -> None: ...


_Closable = TypeVar("_Closable", bound=_CanClose)


class _Ctx:
    """One run's working state."""

    def __init__(self, ws: WorkspaceCore, dry_run: bool):
        self.ws = ws
        self.dry_run = dry_run
        self.today = clock.today()
        self.db = None
        self.files = Files(ws, dry_run)
        self._opened = ExitStack()  # what the run opened, closed with it (last first, each whatever the others do)
        state = ws.kit_dir / "state.db"
        if not dry_run or state.exists():
            self.db = ws.open_state()
            if not dry_run:
                ensure_recall_schema(self.db)
                store.ensure_schema(self.db)

    @property
    def changed(self) -> list[str]:
        return self.files.changed

    def has(self, table: str) -> bool:
        if self.db is None:
            return False
        row = self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone()
        return row is not None

    def read(self, rel: str) -> str | None:
        return self.files.read(rel)

    def write(self, rel: str, text: str) -> None:
        """For files only the dream writes (its reports); files people edit go through `update`."""
        self.files.write(rel, text)

    def update(self, rel: str, change) -> str | None:
        """A compare-and-swap change of a file people edit (see `Files.update`)."""
        return self.files.update(rel, change)

    def closing(self, thing: _Closable) -> _Closable:
        """`thing`, closed when the run ends."""
        return self._opened.enter_context(closing(thing))

    def close(self) -> None:
        try:
            self._opened.close()
        finally:
            if self.db is not None:
                self.db.close()


def _phase_stats(ctx: _Ctx, phase: str, virtual: Iterable[Candidate]) -> dict[str, store.PhaseStats]:
    stats = store.phase_stats(ctx.db, phase) if ctx.has("dream_phase_hits") else {}
    if ctx.dry_run:  # count the hits this run would have recorded
        day = ctx.today.isoformat()
        for c in virtual:
            s = stats.get(c.id)
            if s is None:
                stats[c.id] = store.PhaseStats(1, day)
            elif s.last_day != day:
                stats[c.id] = store.PhaseStats(s.hits + 1, day)
    return stats


def _record(ctx: _Ctx, phase: str, cands: Iterable[Candidate], *, count_first: bool = False) -> tuple[int, int]:
    """Record tonight's hits of a phase (a dry run only counts them): how many are new today (a
    re-run of the day adds none), and — `count_first`, for the diary's Light line — how many the
    phase never had before (0 otherwise: an applied run reads the phase's stats only for it)."""
    cands = list(cands)
    read = (ctx.dry_run or count_first) and ctx.has("dream_phase_hits")
    stats = store.phase_stats(ctx.db, phase) if read else {}
    first = sum(1 for c in cands if c.id not in stats) if count_first else 0
    if ctx.dry_run:
        return sum(1 for c in cands if (stats.get(c.id) is None or stats[c.id].last_day != ctx.today.isoformat())), first
    return store.record_hits(ctx.db, phase, ctx.today, ((c.id, c.key, c.claim) for c in cands)), first


def _embedder(ctx: _Ctx, cands: list[Candidate], notes: list[str]):
    """The workspace's memory embedder behind the dream's vector cache; None means lexical similarity."""
    if not cands:
        return None
    from kit.dreaming.embed import CachedEmbedder
    from kit.memory.embeddings import EmbeddingError
    from kit.memory.service import memory_for

    mem = memory_for(ctx.ws)
    inner = mem.embedder
    if inner is None:
        if mem.embedding_error:  # the configured model is not on disk (not: no sentence-transformers)
            notes.append(f"embeddings unavailable, similarity is lexical: {mem.embedding_error}")
        return None
    indexed = ctx.closing(mem.vector_reader())  # one index.db connection for the whole dream
    try:  # CachedEmbedder reads `dim`, which loads the model: a model that cannot load means lexical
        return CachedEmbedder(inner, ctx.db, store=not ctx.dry_run, day=ctx.today.isoformat(),
                              indexed=indexed)
    except EmbeddingError as exc:
        notes.append(f"embeddings unavailable, similarity is lexical: {exc}")
        return None


def run_dream(ws: WorkspaceCore, *, phases: Iterable[str] | str = PHASES, dry_run: bool = False, progress: ProgressCallback | None = None,
              lock_wait: float | None = None, lock: LockFile | None = None) -> DreamResult:
    """Run the dreaming phases on `ws`. Only `deep` writes MEMORY.md; `dry_run` writes nothing.
    `progress` receives a `kit.progress.Status` as each phase starts (the CLI shows a spinner).

    `lock` is a dream lock the caller already holds (the fleet takes it first, to roll back an
    interrupted run before this one); it stays held. Otherwise the run takes and releases its own."""
    wanted = normalise_phases(phases)
    held = lock
    if held is not None and not held.held:
        raise BusyError("run_dream was given a dream lock that is not held")
    lock = None if (dry_run or held is not None) else acquire_lock(ws, lock_wait, progress=progress)
    try:
        report(progress, Status("dreaming…", task="dream"))
        ctx = _Ctx(ws, dry_run)
        try:
            if dry_run:  # a preview: no hook events
                with gc_paused():
                    return _run(ctx, wanted, progress)
            day = ctx.today.isoformat()
            dream_events.started(ws, wanted, day)
            try:
                with gc_paused():  # the hooks around it run with the collector as it was
                    result = _run(ctx, wanted, progress)
            except Exception as exc:
                dream_events.failed(ws, wanted, day, exc)
                raise
            dream_events.finished(ws, result)
            return result
        finally:
            ctx.close()
    finally:
        if lock is not None:
            lock.release()


def _worded(d: deep_phase.Decision) -> str:
    """A held-back decision in the Deep report, worded as elsewhere ("over_limit" read as a code):
    "stale: a newer value is in …", or the detail alone when it says it ("over today's limit of 10")."""
    words = deep_phase.action_words(d.action)
    return d.detail if d.detail.startswith(words) else f"{words}: {d.detail}"


def load_candidates(ws: WorkspaceCore, db, *, store: bool = False) -> list[Candidate]:
    """Read the recall log and build tonight's candidates, with the junk verdicts the workspace
    already knows (`store`: keep the new ones in state.db, and what this build derived from the
    log — `kit.dreaming.checkpoint` — for the next process; a dry run does neither).

    The log only grows (rows are inserted, never changed): while its tables hold the same rows
    (count and last id of each) and the rules are the same, the candidates are the ones this
    workspace object built last time — a re-run of an idle day, or the next phase of a preview,
    reads nothing more. A new process resumes the last dream's checkpoint: it reads only the
    days since (the candidates are exactly those of the whole log)."""
    mark = _log_mark(db)
    if mark is None:
        return []
    memo = ws.owned("dream-candidates", dict)
    # a dry run's build makes no checkpoint (nor stores its verdicts): an applied dream after it
    # builds again, with the verdicts this workspace object already judged
    if memo.get("mark") != mark or (store and not memo["stored"]):
        def judge(snippets: list[str]) -> dict:
            return verdicts_for(ws).judge(db, snippets, store=store)

        with gc_paused():  # a burst of allocation with no cycles (kit.gcpause), for every caller
            built = checkpoint.build(db, judge, checkpoint.stored(db), keep=store)
        memo.clear()
        memo.update(mark=mark, stored=store, cands=tuple(built.candidates), checkpoint=built.checkpoint)
    if store and memo["checkpoint"] is not None:
        from kit.dreaming import store as dream_store

        dream_store.ensure_schema(db)
        checkpoint.keep(db, memo["checkpoint"])
        memo["checkpoint"] = None
    return list(memo["cands"])


def _settle(ctx: _Ctx, notes: list[str], memory_text: str, archive_text: str) -> None:
    """Bring state.db level with the files (MEMORY.md and the archive, as the run read them) before
    anything is decided: the exits the archive holds that it does not know (`deep.archived`), and
    the promotions MEMORY.md holds (`deep.unrecorded`), so a deletion after tonight is a demotion
    that sticks, and only a deletion is."""
    promos = store.promotions(ctx.db)
    exits = deep_phase.archived(memory_text, archive_text, promos)
    rows = deep_phase.unrecorded(memory_text, promos, ctx.today)
    if not rows and not exits:
        return
    store.ensure_schema(ctx.db)
    with ctx.db.transaction():
        for p, status, day, note in exits:
            store.set_status(ctx.db, p.key, p.claim, status, date.fromisoformat(day), note=note or None)
        for row in rows:
            store.upsert_promotion(ctx.db, row)
    if exits:
        notes.append(f"recorded {plural(len(exits), 'entry', 'entries')} the archive holds as retired or superseded that "
                     "state.db still had as promoted (a dream stopped before recording them)")
    if rows:
        notes.append(f"recorded {plural(len(rows), 'promotion')} MEMORY.md holds under Kit's marker that state.db "
                     "did not know (a dream stopped before recording them, an import, a new .kit/)")


def _log_mark(db) -> tuple | None:
    """Where the recall log is: (rows, last id) of each of its tables, and the version of the code
    candidates are built by (the junk rules included)."""
    marks = checkpoint.marks(db)
    if marks is None:
        return None
    return (*(None if m is None else tuple(m) for m in marks.values()), checkpoint.version())


def _run(ctx: _Ctx, wanted: tuple[str, ...], progress: ProgressCallback | None) -> DreamResult:
    ws, cfg, today = ctx.ws, ctx.ws.config, ctx.today
    # a file the dream appends to but cannot read stops it before it writes anything
    texts = {rel: ctx.read(rel) or "" for rel in (deep_phase.MEMORY_FILE, deep_phase.ARCHIVE_FILE, "DREAMS.md")}
    notes: list[str] = []
    if not ctx.dry_run and ctx.db is not None:
        _settle(ctx, notes, texts[deep_phase.MEMORY_FILE], texts[deep_phase.ARCHIVE_FILE])
    cands = load_candidates(ctx.ws, ctx.db, store=not ctx.dry_run) if ctx.db is not None else []
    embedder = _embedder(ctx, cands, notes) if ({"rem", "deep"} & set(wanted)) else None
    new_hits = new_light = first_light = 0
    light = rem = None
    staged: list[Candidate] = []
    truths: list[Candidate] = []

    if "light" in wanted:
        report(progress, Status("dreaming: light", task="dream"))
        phase = cfg.dreaming.light
        light = run_light(cands, today=today, lookback_days=phase.lookback_days, limit=phase.limit,
                          dedupe=phase.dedupe)
        staged = list(light.staged)
        new_light, first_light = _record(ctx, "light", staged, count_first=True)
        new_hits += new_light
        if light.considered:  # an idle day leaves no report (and no commit)
            ctx.write(reports.report_path("light", today), reports.light_report(today, light))

    if "rem" in wanted:
        report(progress, Status("dreaming: REM", task="dream"))
        phase = cfg.dreaming.rem
        rem = run_rem(cands, today=today, lookback_days=phase.lookback_days, limit=phase.limit,
                      min_pattern_strength=phase.min_pattern_strength,
                      truth_min_confidence=phase.truth_min_confidence, embedder=embedder)
        truths = [t.cand for t in rem.truths]
        new_hits += _record(ctx, "rem", truths)[0]
        if rem.considered:
            ctx.write(reports.report_path("rem", today), reports.rem_report(today, rem))

    night = DeepOutcome()
    if "deep" in wanted:
        report(progress, Status("dreaming: deep", task="dream"))
        night = _deep(ctx, cands, staged, truths, embedder)
    promoted = night.promoted

    wrote_diary = False
    diary_mode = cfg.dreaming.diary
    if diary_mode != "off" and (new_hits or promoted or night.to_verify):
        entry, problem = reports.render_diary(ws, _diary_context(ctx, light, rem, night, new_light, first_light))
        if problem:
            notes.append(problem)
        if diary_mode == "llm" and not ctx.dry_run:
            entry, problem = reports.llm_diary(ws, entry)
            if problem:
                notes.append(problem)
        ctx.update("DREAMS.md", lambda current: reports.append_diary(current or "# Dream diary\n", entry))
        wrote_diary = not ctx.dry_run

    if embedder is not None:
        embedder.finish()
    git = None
    if not ctx.dry_run and cfg.git.autocommit and ctx.changed:
        git = _commit(ctx, len(promoted))
    if not ctx.dry_run:
        reindex(ws, ctx.changed)
    return DreamResult(
        now=clock.now().isoformat(timespec="seconds"), day=today, applied=not ctx.dry_run, phases=wanted,
        light=light, rem=rem, ranked=night.ranked, decisions=night.decisions, promoted=promoted,
        retired=night.retired, demoted=night.demoted, changed=tuple(sorted(ctx.changed)), diary=wrote_diary,
        similarity="embeddings" if embedder is not None else "lexical", git=git, notes=tuple(notes),
        superseded=night.superseded, to_verify=night.to_verify,
    )


MEMORY_FILES = (deep_phase.MEMORY_FILE, deep_phase.ARCHIVE_FILE)
DREAM_OUTPUTS = ("memory/dreaming", "DREAMS.md")  # Kit-written, carried into the next memory commit


def _commit(ctx: _Ctx, promoted: int) -> dict[str, Any]:
    """git.autocommit: one commit per change of memory; a night that only wrote reports and the
    diary leaves them for the next such commit rather than committing "promote 0 memories"."""
    from kit.dreaming.gitops import CommitResult, autocommit

    if not any(p in MEMORY_FILES for p in ctx.changed):
        return CommitResult(False, "memory unchanged; reports and diary wait for the next dream that "
                                   "changes MEMORY.md").to_json()
    message = f"dream: promote {plural(promoted, 'memory')} ({ctx.today.isoformat()})"
    return autocommit(ctx.ws.root, sorted(ctx.changed), message, carry=DREAM_OUTPUTS).to_json()


def _fact_id(text: str) -> str:
    """A fact's identity in the diary: its normalised claim (list marker, case, spacing ignored)."""
    return normalise_claim(text)


def _diary_context(ctx: _Ctx, light, rem, night: DeepOutcome, new_light: int, first_light: int) -> dict[str, Any]:
    now = clock.now()
    cfg = ctx.ws.config
    text = ctx.read(deep_phase.MEMORY_FILE) or ""
    # each fact once: a truth REM found that Deep promoted tonight is already listed as promoted
    promoted: list[dict[str, str]] = []
    superseded: list[dict[str, str]] = []
    seen: set[str] = set()
    keys: set[str] = set()
    for d in night.decisions:
        if not d.writes or d.live is None:
            continue
        keys.add(d.ranked.cand.key)
        line = managed.one_line(d.live.text, 200)
        if _fact_id(line) not in seen:
            seen.add(_fact_id(line))
            promoted.append({"key": d.live.key, "text": line})
            if d.action == "superseded" and d.old is not None:
                superseded.append({"text": line, "old": managed.one_line(d.old.text, 200)})
    # a fact you removed from MEMORY.md is not "true lately" in the entry that says it will not come back
    removed = {p.claim for p in store.promotions(ctx.db) if p.status in store.DEMOTED} if ctx.db is not None else set()
    truths: list[dict[str, str]] = []
    for t in rem.truths if rem else ():
        line = managed.one_line(t.cand.snippet, 160)
        if t.cand.key in keys or _fact_id(line) in seen or _fact_id(t.cand.snippet) in seen:
            continue
        if removed & (t.cand.claims | {t.cand.claim}):
            continue
        seen.add(_fact_id(line))
        truths.append({"text": line})
    return {
        "date": ctx.today.isoformat(),
        "time": now.strftime("%H:%M"),
        "staged": len(light.staged) if light else 0,
        "new_staged": new_light,  # not staged by an earlier dream today
        "first_staged": first_light,  # never staged before
        "themes": [{"name": t.name, "strength": round(t.strength, 2), "size": len(t.members)}
                   for t in (rem.themes if rem else ())],
        "truths": truths,
        "promoted": promoted,
        "superseded": superseded,
        "to_verify": [{"id": v.id, "text": managed.one_line(v.text, 200), "old": managed.one_line(v.old_text, 200),
                       "reason": v.reason} for v in night.to_verify],
        "retired": len(night.retired),
        "demoted": len(night.demoted),
        "memory_chars": managed.section_chars(text),
        "memory_max_chars": cfg.dreaming.memory_max_chars,
    }


@dataclass(frozen=True)
class DeepOutcome:
    """What Deep did tonight (empty when it did not run)."""

    ranked: tuple[Ranked, ...] = ()
    decisions: tuple[deep_phase.Decision, ...] = ()
    promoted: tuple[str, ...] = ()
    retired: tuple[str, ...] = ()
    demoted: tuple[str, ...] = ()
    superseded: tuple[str, ...] = ()
    to_verify: tuple[store.VerifyItem, ...] = ()


def _deep(ctx: _Ctx, cands: list[Candidate], staged: list[Candidate], truths: list[Candidate], embedder) -> DeepOutcome:
    """Plan tonight's Deep (pure: nothing is written), then apply the plan."""
    night = deep_phase.plan(
        cands, today=ctx.today, settings=DeepSettings.from_config(ctx.ws.config),
        memory_text=ctx.read(deep_phase.MEMORY_FILE) or "",
        promotions=store.promotions(ctx.db) if ctx.db is not None else [],
        light=_phase_stats(ctx, "light", staged), rem=_phase_stats(ctx, "rem", truths),
        root=ctx.ws.root, embedder=embedder,
        pending_verify=store.verify_items(ctx.db, "pending") if ctx.db is not None else [],
        kept_both=store.verify_items(ctx.db, "kept_both") if ctx.db is not None else [],
    )
    return apply_deep(ctx, night, cands)


def apply_deep(ctx: _Ctx, night: deep_phase.DeepPlan, cands: list[Candidate]) -> DeepOutcome:
    """Write a Deep plan: demotions and promotions in state, MEMORY.md (additions, superseded
    entries out, the cap), the archive, the to-verify queue and the day's report."""
    today, day = ctx.today, ctx.today.isoformat()
    cap = ctx.ws.config.dreaming.memory_max_chars
    if not ctx.dry_run:
        with ctx.db.transaction():
            for p in night.demoted:
                store.set_status(ctx.db, p.key, p.claim, "demoted", today)
            for p, snippet in night.snippets:
                store.set_snippet(ctx.db, p.key, p.claim, snippet)

    chosen = night.chosen
    entries = night.entries()
    replaced = night.replaced
    by_claim = {claim: c for c in cands for claim in c.claims | {c.claim}}
    promo_by_pair = {(p.key, p.claim): p for p in night.promotions}

    def last_recall(e: managed.Entry) -> tuple[str, float]:
        c = by_claim.get(e.claim)
        p = promo_by_pair.get((e.key, e.claim))
        last = c.last_day.isoformat() if c else (p.last_recall_day if p else e.attr("date", "0000-00-00"))
        try:
            sc = float(e.attr("score", "0"))
        except ValueError:
            sc = 0.0
        return last, sc

    by_new = {(d.old.entry.key, d.old.entry.claim): e.key for d, e in zip(chosen, entries, strict=True)
              if d.action == "superseded" and d.old is not None and d.old.entry is not None}
    removed = [(e.key, e.claim) for e in replaced]
    # the archive first, with what MEMORY.md as it is now would lose: a dream stopped between the
    # two writes has lost nothing (the archive's append skips entries it already holds)
    planned = planned_retirements(ctx.read(deep_phase.MEMORY_FILE) or "", add=entries, remove=removed, cap=cap,
                                  last_recall=last_recall)
    if planned or replaced:
        ctx.update(deep_phase.ARCHIVE_FILE, lambda current: deep_phase.archive_text(
            current, [*replaced, *planned], today, superseded=by_new))
    # MEMORY.md through write_memory (a compare-and-swap: applied to the file as it is when written)
    retired = write_memory(ctx.files, add=entries, remove=removed, cap=cap, last_recall=last_recall)
    archived = {(p.key, p.claim) for p in planned}
    late = [e for e in retired if (e.key, e.claim) not in archived]
    if late:  # the user saved MEMORY.md in between and the cap took other entries: archived after
        ctx.update(deep_phase.ARCHIVE_FILE, lambda current: deep_phase.archive_text(current, late, today))

    queued: list[store.VerifyItem] = []
    rows = [_promotion_row(d, e, day) for d, e in zip(chosen, entries, strict=True)]
    if not ctx.dry_run:
        with ctx.db.transaction():
            for row in rows:
                store.upsert_promotion(ctx.db, row)
            for old in replaced:
                store.set_status(ctx.db, old.key, old.claim, "superseded", today, note=f"superseded by {by_new[(old.key, old.claim)]}")
            for e in retired:
                store.set_status(ctx.db, e.key, e.claim, "retired", today)
            for item in night.verify_items():
                if store.queue_verify(ctx.db, item):
                    queued.append(next(v for v in store.verify_items(ctx.db) if (v.claim, v.old_claim) ==
                                       (item.claim, item.old_claim)))
        promos = store.promotions(ctx.db)
    else:
        queued = night.verify_items()
        promos = list(night.promotions) + rows

    notes = {d.ranked.cand.id: _worded(d) for d in night.decisions if not d.writes}
    promoted_today = [p for p in promos if p.promoted_day == day and p.status == "active"]
    retired_today = [p for p in promos if p.status == "retired" and p.status_day == day]
    demoted_today = [p for p in promos if p.status == "demoted" and p.status_day == day]
    superseded_today = [p for p in promos if p.status == "superseded" and p.status_day == day]
    if night.ranked or promoted_today or retired_today or demoted_today:
        ctx.write(reports.report_path("deep", today), reports.deep_report(
            today, night.ranked, promoted_today=promoted_today, notes=notes, retired_today=retired_today,
            demoted_today=demoted_today, superseded_today=superseded_today, to_verify=queued,
            held_back={d.ranked.cand.id for d in night.decisions if d.held_back}))
    return DeepOutcome(
        ranked=night.ranked, decisions=night.decisions, promoted=tuple(e.key for e in entries),
        retired=tuple(e.key for e in retired), demoted=tuple(p.key for p in night.demoted),
        superseded=tuple(e.key for e in replaced), to_verify=tuple(queued),
    )


def _promotion_row(d: deep_phase.Decision, e: managed.Entry, day: str) -> store.Promotion:
    c = d.ranked.cand
    note = f"supersedes {d.old.key or 'a line of yours'}" if d.action == "superseded" and d.old else ""
    return store.Promotion(key=e.key, claim=c.claim, snippet=e.text, score=round(d.ranked.score.total, 6),
                           recalls=c.recall_count, queries=c.unique_queries, promoted_day=day,
                           last_recall_day=c.days[-1], status="active", status_day=day, note=note)


def reindex(ws: WorkspaceCore, changed: list[str]) -> None:
    """Keep the search index current for the memory files a dream wrote (the archive above all)."""
    paths = [p for p in changed if p == "MEMORY.md" or (p.startswith("memory/") and not p.startswith("memory/dreaming/"))]
    if not paths:
        return
    from kit.memory.service import memory_for

    memory_for(ws).sync(paths)


def doctor_checks(ws: WorkspaceCore) -> list[Problem]:
    out = []
    lock = LockFile(ws.kit_dir / "locks" / "dream.lock")
    if lock.is_locked():  # an OS lock: a dream that died released it, so nothing is ever stale
        info = lock.holder()
        out.append(Problem(
            area="dreaming", severity="info", path=LOCK_REL,
            message=f"a dream is running (pid {info[0] if info else '?'})",
        ))
    cfg = ws.config
    schedule, tz = cfg.dreaming.schedule, cfg.dreaming.timezone
    try:
        from kit.dreaming.schedule import next_run

        nxt = next_run(schedule, tz, clock.now())
    except Exception as exc:  # a bad schedule or zone is a config problem the user must see
        out.append(Problem(area="dreaming", path=CONFIG_FILE, message=str(getattr(exc, "message", exc))))
        return out
    message = (f"schedule {schedule!r} ({tz or 'local time'}); next dream "
               f"{nxt.isoformat(timespec='minutes')} while `kit serve` or the cron job runs"
               if cfg.dreaming.enabled else
               "scheduled dreaming is off (dreaming.enabled: false); `kit dream` still runs on demand")
    out.append(Problem(area="dreaming", severity="info", message=message))
    return out
