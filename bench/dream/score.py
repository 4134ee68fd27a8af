"""Score a lived month: what reached MEMORY.md, and was it worth keeping.

- promoted: entries that ever appeared in MEMORY.md's promoted section.
- precision: promotions that were a fact's value current on the day it was promoted (first time
  for that value) / promotions.
- recall: facts whose current value is in MEMORY.md at the end / facts.
- junk, noise, bursts, deleted: promotions with that label (transcript lines are junk); deleted
  counts a line the user removed from the notes.
- stale: promotions of a value that a newer one had already replaced in the notes, plus values in
  the final MEMORY.md that a newer value replaced.
- contradictions: facts with two or more values in the final MEMORY.md.
- verify: items waiting in the "to verify" queue at the end (where Kit has one).
- queued: for a persona whose notes contradict lines of its own MEMORY.md (`Verdict`), how many of
  those contradictions reached the "to verify" queue (against the user's line) / how many there are.
- unverified: a contradicting value promoted without the user's accept (before it, or after a
  reject), a value queued again after the user answered it, or a user's line lost to a rejected one.
  alarms: items queued "to verify" that contradict nothing (the bench leaves them pending; the
  user would have to reject one of two true lines).
  An accepted value counts as a fact: a good promotion, and kept when it is in MEMORY.md at the end
  with the user's old line gone.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulate import Label, World, memory_entries, norm


@dataclass
class Score:
    persona: str
    promoted: int = 0
    good: int = 0
    facts: int = 0
    kept: int = 0
    junk: int = 0
    noise: int = 0
    bursts: int = 0
    deleted: int = 0
    stale: int = 0
    contradictions: int = 0
    duplicates: int = 0
    other: int = 0
    verify: int = 0
    expected: int = 0  # contradictions the notes hold against the user's own MEMORY.md lines
    queued: int = 0  # of those, queued "to verify" against that line
    unverified: int = 0
    alarms: int = 0  # queued "to verify" though the notes contradict nothing of MEMORY.md
    details: list[str] | None = None

    @property
    def precision(self) -> float:
        return self.good / self.promoted if self.promoted else 1.0

    @property
    def recall(self) -> float:
        return self.kept / self.facts if self.facts else 1.0


def label_of(world: World, text: str) -> Label:
    key = norm(text)
    if key in world.labels:
        return world.labels[key]
    if key.startswith(("**user:**", "**assistant:**")):
        return Label("transcript")
    # an entry cut to one line (…) still names its line
    for k, label in world.labels.items():
        if len(key) >= 24 and (k.startswith(key) or key.startswith(k)):
            return label
    return Label("other")


def newest_version_by(world: World, fact: str, day: int) -> int:
    return max(v for (f, v), d in world.version_day.items() if f == fact and d <= day)


def pending_verify(world: World) -> int:
    try:
        from kit.dreaming import verify
    except ImportError:
        return 0
    from kit.workspace import Workspace

    return len(verify.pending(Workspace.open(world.root)))


def score(world: World) -> Score:
    p = world.persona
    accepted = [v for v in p.verdicts if v.action == "accept"]
    s = Score(p.name + (" (held out)" if p.held_out else ""), facts=len(p.facts) + len(accepted), details=[],
              expected=len(p.verdicts))
    verdicts = {v.id: v for v in p.verdicts}
    seen_values: set[tuple[str, int]] = set()
    for day, text in world.timeline:
        s.promoted += 1
        lab = label_of(world, text)
        tag = lab.kind
        if lab.kind == "fact":
            current = newest_version_by(world, lab.id, day)
            if lab.version < current:
                s.stale += 1
                tag = "stale"
            elif (lab.id, lab.version) in seen_values:
                s.duplicates += 1
                tag = "duplicate"
            else:
                s.good += 1
                tag = "ok"
            seen_values.add((lab.id, lab.version))
        elif lab.kind in ("junk", "transcript"):
            s.junk += 1
        elif lab.kind == "noise":
            s.noise += 1
        elif lab.kind == "burst":
            s.bursts += 1
        elif lab.kind == "deleted":
            s.deleted += 1
        elif lab.kind == "verify":
            v, on = verdicts[lab.id], world.decided.get(lab.id)
            if v.action == "accept" and on is not None and day >= on and (lab.id, 0) not in seen_values:
                s.good += 1
                tag = "accepted"
            else:
                s.unverified += 1
                tag = "unverified"
            seen_values.add((lab.id, 0))
        else:
            s.other += 1
        s.details.append(f"day {day:2d} {tag:<10} {text[:90]}")
    final = [label_of(world, t) for t in memory_entries(world.root)]
    values: dict[str, set[int]] = {}
    for lab in final:
        if lab.kind == "fact":
            values.setdefault(lab.id, set()).add(lab.version)
    for f in p.facts:
        last = len(f.versions) - 1
        have = values.get(f.id, set())
        if last in have:
            s.kept += 1
        else:
            s.details.append(f"missing    {f.id}: {f.versions[-1][1]}")
        s.stale += sum(1 for v in have if v < last)  # a replaced value still in MEMORY.md
        s.contradictions += len(have) > 1
    from kit.dreaming import managed

    mine = managed.user_lines((world.root / "MEMORY.md").read_text(encoding="utf-8"))
    entries = {norm(t) for t in memory_entries(world.root)}
    for v in p.verdicts:
        queued = world.queued.get(v.id)
        if queued and norm(queued[1]) == norm(v.memory_line):
            s.queued += 1
        else:
            s.details.append(f"not queued {v.id}: {v.text}")
        if v.action == "accept":
            if norm(v.text) in entries and v.memory_line not in mine:
                s.kept += 1
            else:
                s.details.append(f"missing    {v.id} (accepted): {v.text}")
        elif v.memory_line not in mine:
            s.unverified += 1
            s.details.append(f"lost       {v.id}: your line {v.memory_line!r} left MEMORY.md after a reject")
    s.unverified += len(world.requeued)
    s.alarms = len(world.alarms)
    s.verify = pending_verify(world)
    return s


HEADER = ("persona", "promoted", "precision", "recall", "junk", "noise", "bursts", "deleted", "stale",
          "contradict", "dup", "verify", "queued", "unverified", "alarms")


def row(s: Score) -> tuple:
    return (s.persona, s.promoted, f"{s.precision:.2f}", f"{s.recall:.2f}", s.junk, s.noise, s.bursts, s.deleted,
            s.stale, s.contradictions, s.duplicates, s.verify, f"{s.queued}/{s.expected}" if s.expected else "-",
            s.unverified, s.alarms)


def table(scores: list[Score]) -> str:
    rows = [HEADER, *[row(s) for s in scores]]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(HEADER))]
    return "\n".join("  ".join(str(c).rjust(w) if i else str(c).ljust(w)
                               for i, (c, w) in enumerate(zip(r, widths, strict=True))) for r in rows)


def plain_baseline(world: World) -> Score:
    """A plain rule on the same recall log, for scale: promote every line (still in the notes) that
    search returned at least 3 times on at least 2 days — no credit, no junk filter, no claims."""
    import sqlite3

    db = sqlite3.connect(world.root / ".kit" / "state.db")
    try:
        rows = db.execute("SELECT snippet, COUNT(*), COUNT(DISTINCT day) FROM recall_events GROUP BY claim_hash, path")
        picked = {snippet for snippet, n, d in rows if n >= 3 and d >= 2}
    finally:
        db.close()
    notes = "\n".join(p.read_text(encoding="utf-8") for p in (world.root / "memory").glob("*.md"))
    picked = {t for t in picked if t.strip() in notes}
    s = Score(f"{world.persona.name} (plain)", facts=len(world.persona.facts), expected=len(world.persona.verdicts))
    values: dict[str, set[int]] = {}
    last = {f.id: len(f.versions) - 1 for f in world.persona.facts}
    for text in sorted(picked):
        s.promoted += 1
        lab = label_of(world, text)
        if lab.kind == "fact":
            values.setdefault(lab.id, set()).add(lab.version)
            if lab.version < last[lab.id]:
                s.stale += 1
            else:
                s.good += 1
        elif lab.kind in ("junk", "transcript"):
            s.junk += 1
        elif lab.kind == "noise":
            s.noise += 1
        elif lab.kind == "burst":
            s.bursts += 1
        elif lab.kind == "deleted":
            s.deleted += 1
        elif lab.kind == "verify":  # the plain rule asks nobody
            s.unverified += 1
    s.kept = sum(1 for fid, v in last.items() if v in values.get(fid, set()))
    s.contradictions = sum(1 for v in values.values() if len(v) > 1)
    return s
