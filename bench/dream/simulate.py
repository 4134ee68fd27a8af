"""Live four weeks of a persona: notes written day by day, questions asked through Kit's agent loop
(real active recall, real `memory_search` / `memory_get` tools, real session-memory archives), and
a dream every night at 23:00, all under KIT_NOW.

The model is the one stand-in: `BenchModel` plays a competent assistant. It searches with the
persona's query (or answers from the active-recall block when the answer is already there), picks
the hit that answers the question when one does — the newest version of a fact first, as a model
reading the dated paths would — else the top hit, sometimes reads the lines in full with
`memory_get`, and replies quoting the note. Which of its hits count as recalls, and how much, is
Kit's business: that is what the benchmark measures.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from personas import Ask, Persona

START = date(2026, 3, 2)  # day 1, a Monday
DAYS = 28
P_ANSWER_FROM_BLOCK = 0.4  # the answer is in the active-recall block: no search at all
P_READ_IN_FULL = 0.3  # memory_get on the chosen hit before answering


def day_date(day: int) -> date:
    return START + timedelta(days=day - 1)


def note_rel(day: int) -> str:
    return f"memory/{day_date(day).isoformat()}.md"


def set_now(day: int, hour: int, minute: int = 0) -> None:
    os.environ["KIT_NOW"] = f"{day_date(day).isoformat()}T{hour:02d}:{minute:02d}:00+00:00"


def norm(text: str) -> str:
    """What the scorer compares: marker-free, whitespace-collapsed, lower-cased."""
    text = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", text.strip())
    return " ".join(text.lower().split()).rstrip("…")


@dataclass(frozen=True)
class Label:
    kind: str  # fact | noise | junk | burst | deleted | transcript | verify (a Verdict's note line)
    id: str = ""
    version: int = 0
    day: int = 0  # the day it was written


@dataclass
class Question:
    day: int
    ask: Ask
    targets: tuple[tuple[int, str], ...]  # (version, text) of the lines that answer it; () = any hit


@dataclass
class World:
    persona: Persona
    root: Path
    labels: dict[str, Label] = field(default_factory=dict)
    version_day: dict[tuple[str, int], int] = field(default_factory=dict)  # (fact, version) -> day written
    timeline: list[tuple[int, str]] = field(default_factory=list)  # (day, entry text) of each promotion
    dropped: list[tuple[int, str]] = field(default_factory=list)  # (day, entry text) left MEMORY.md
    deleted_day: dict[str, int] = field(default_factory=dict)
    turns: int = 0
    dream_seconds: list[float] = field(default_factory=list)
    queued: dict[str, tuple[int, str]] = field(default_factory=dict)  # verdict id -> (day queued, old text)
    decided: dict[str, int] = field(default_factory=dict)  # verdict id -> the day the user accepted/rejected
    requeued: set[int] = field(default_factory=set)  # items queued again for a value the user had answered
    decided_items: set[int] = field(default_factory=set)
    alarms: set[int] = field(default_factory=set)  # queued items that contradict nothing (left pending)


# --------------------------------------------------------------------------- the month's notes


def plan_lines(p: Persona) -> tuple[dict[int, list[str]], dict[str, Label]]:
    """Each day's new bullets (in a fixed shuffled order) and every line's label."""
    by_day: dict[int, list[str]] = {d: [] for d in range(1, DAYS + 1)}
    labels: dict[str, Label] = {}

    def put(day: int, text: str, label: Label) -> None:
        by_day[day].append(text)
        labels[norm(text)] = label

    for f in p.facts:
        for v, (day, text) in enumerate(f.versions):
            put(day, text, Label("fact", f.id, v, day))
        for day, v, text in f.restated:
            put(day, text, Label("fact", f.id, v, day))
    for b in p.bursts:
        put(b.day, b.text, Label("burst", b.id, 0, b.day))
    for d in p.deletions:
        put(d.day, d.text, Label("deleted", d.id, 0, d.day))
    for i, text in enumerate(p.noise):
        put(1 + (i * 5) % DAYS if i < DAYS else 1 + (i * 3 + 2) % DAYS, text, Label("noise", day=0))
    for day, text in p.decoys:
        put(day, text, Label("noise", "decoy", 0, day))
    for day, text in p.junk:
        put(day, text, Label("junk", day=day))
    for v in p.verdicts:
        put(v.day, v.text, Label("verify", v.id, 0, v.day))
    for day in by_day:
        random.Random(f"{p.name}-order-{day}").shuffle(by_day[day])
    return by_day, labels


def write_note(root: Path, day: int, lines: list[str]) -> None:
    path = root / note_rel(day)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {day_date(day).isoformat()}\n\n" + "".join(f"- {line}\n" for line in lines), encoding="utf-8")


def edit_note(root: Path, day: int, edit: Callable[[list[str]], list[str]]) -> None:
    path = root / note_rel(day)
    lines = path.read_text(encoding="utf-8").split("\n")
    path.write_text("\n".join(edit(lines)), encoding="utf-8")


def apply_move(root: Path, move, labels: dict[str, Label]) -> None:
    def edit(lines: list[str]) -> list[str]:
        if move.kind == "drop_noise":  # the first everyday line goes: every line below it moves up
            at = next(i for i, line in enumerate(lines) if line.startswith("- ")
                      and labels.get(norm(line), Label("?")).kind == "noise")
            return lines[:at] + lines[at + 1 :]
        at = lines.index(f"- {move.target}")
        if move.kind == "heading_before":
            return lines[:at] + ["", move.heading, ""] + lines[at:]
        if move.kind == "to_end":
            rest = lines[:at] + lines[at + 1 :]
            while rest and rest[-1] == "":
                rest.pop()
            return rest + [lines[at], ""]
        raise ValueError(move.kind)

    edit_note(root, move.note_day, edit)


def delete_line(root: Path, day: int, text: str) -> None:
    edit_note(root, day, lambda lines: [line for line in lines if line != f"- {text}"])


# --------------------------------------------------------------------------- the questions


def questions_for(p: Persona, day: int) -> list[Question]:
    out: list[Question] = []
    for f in p.facts:
        if day in f.days:
            k = f.days.index(day)
            targets = tuple((v, t) for v, (_, t) in enumerate(f.versions)) + tuple((v, t) for _, v, t in f.restated)
            out.append(Question(day, f.asks[k % len(f.asks)], targets))
    for b in p.bursts:
        if day == b.ask_day:
            out.extend(Question(day, a, ((0, b.text),)) for a in b.asks)
        if b.stray and b.stray[0] == day:
            out.append(Question(day, b.stray[1], ((0, b.text),)))
    for d in p.deletions:
        if day in d.days:
            out.append(Question(day, d.asks[d.days.index(day) % len(d.asks)], ((0, d.text),)))
    for v in p.verdicts:
        if day in v.days:
            out.append(Question(day, v.asks[v.days.index(day) % len(v.asks)], ((0, v.text),)))
    out.extend(Question(day, a, ()) for d, a in p.oneoffs if d == day)
    random.Random(f"{p.name}-asks-{day}").shuffle(out)
    return out


def _provider_types():
    try:
        from kit.providers.base import ModelResponse, ToolCall
    except ImportError:  # Kit before providers moved out of the agent (to measure it too)
        from kit.agent.providers.base import ModelResponse, ToolCall
    return ModelResponse, ToolCall


class BenchModel:
    """A competent assistant, scripted per question (see the module docstring)."""

    def __init__(self):
        self.q: Question | None = None
        self.rng = random.Random(0)
        self.chosen: dict[str, Any] | None = None

    def start(self, q: Question, seed: str) -> None:
        self.q, self.rng, self.chosen = q, random.Random(seed), None

    def _pick(self, hits: list[dict[str, Any]]) -> dict[str, Any] | None:
        if not hits:
            return None
        best = None
        for hit in hits:
            text = norm(hit["snippet"])
            for v, target in self.q.targets:
                if norm(target) in text and (best is None or v > best[0]):
                    best = (v, hit)
        return best[1] if best else hits[0]

    def _reply(self, text: str | None):
        ModelResponse, _ = _provider_types()

        if text is None:
            return ModelResponse("I could not find that in your notes.")
        return ModelResponse(f"From your notes: {re.sub(r'^[-*+] ', '', ' '.join(text.split()))}")

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]):
        ModelResponse, ToolCall = _provider_types()

        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        after = messages[last_user + 1 :]
        if not after:
            block = re.findall(r"^- (memory/\S+?):(\d+)-(\d+): (.*)$", messages[last_user]["content"], re.M)
            hits = [{"path": p, "start_line": int(s), "end_line": int(e), "snippet": t} for p, s, e, t in block]
            pick = self._pick(hits) if self.q.targets else None
            if pick is not None and self.q.targets and any(norm(t) in norm(pick["snippet"]) for _, t in self.q.targets) \
                    and self.rng.random() < P_ANSWER_FROM_BLOCK:
                return self._reply(pick["snippet"])
            return ModelResponse(None, (ToolCall("c1", "memory_search", {"query": self.q.ask.query}),))
        last = after[-1]
        if last["role"] == "tool" and self.chosen is None:
            data = json.loads(last["content"])
            hits = data.get("results", [])
            self.chosen = self._pick(hits) or {}
            if self.chosen and self.rng.random() < P_READ_IN_FULL:
                c = self.chosen
                return ModelResponse(None, (ToolCall("c2", "memory_get", {
                    "path": c["path"], "start": c["start_line"], "lines": c["end_line"] - c["start_line"] + 1}),))
        return self._reply(self.chosen.get("snippet") if self.chosen else None)


# --------------------------------------------------------------------------- the month


def memory_entries(root: Path) -> list[str]:
    from kit.dreaming import managed

    text = (root / "MEMORY.md").read_text(encoding="utf-8")
    return [e.text for e in managed.parse(text).entries]


def verdict_of(p: Persona, text: str):
    """The Verdict whose note line a to-verify item's text is (None: an item nobody expected)."""
    return next((v for v in p.verdicts if norm(v.text) == norm(text)), None)


def review_queue(ws, world: World, day: int) -> None:
    """After a dream: note which expected items are queued. In the morning (before the day's notes)
    the user answers each one the bench expects: `kit memory verify accept|reject N`."""
    for item in ws.to_verify(everything=True):
        v = verdict_of(world.persona, item.text)
        if v is None:
            world.alarms.add(item.id)  # a contradiction the notes do not hold: the user must answer it
            continue
        if v.id in world.decided and item.status == "pending" and item.id not in world.decided_items:
            world.requeued.add(item.id)  # answered once, queued again
        world.queued.setdefault(v.id, (day, item.old_text))


def answer_queue(ws, world: World, day: int) -> None:
    for item in ws.to_verify():
        v = verdict_of(world.persona, item.text)
        if v is not None and v.id not in world.decided:
            ws.verify(v.action, item.id)
            world.decided[v.id] = day
            world.decided_items.add(item.id)


def live(p: Persona, root: Path, *, progress: Callable[[str], None] = lambda s: None) -> World:
    import time

    from kit.agent.loop import Agent
    from kit.init import init_workspace
    from kit.memory.service import memory_for
    from kit.workspace import Workspace

    set_now(1, 7)
    init_workspace(root)
    (root / "USER.md").write_text(p.user_md, encoding="utf-8")
    if p.verdicts:  # the user's own lines in MEMORY.md, which the notes will contradict
        memory = root / "MEMORY.md"
        memory.write_text(memory.read_text(encoding="utf-8") + "\n" + "".join(f"- {v.memory_line}\n" for v in p.verdicts),
                          encoding="utf-8")
    world = World(p, root)
    by_day, world.labels = plan_lines(p)
    for f in p.facts:
        for v, (d, _) in enumerate(f.versions):
            world.version_day[(f.id, v)] = d
    ws = Workspace.open(root)
    model = BenchModel()
    seen: set[str] = set()
    for day in range(1, DAYS + 1):
        set_now(day, 7)
        if p.verdicts:
            answer_queue(ws, world, day)
        for move in p.moves:
            if move.day == day:
                apply_move(root, move, world.labels)
        for d in p.deletions:
            if d.deleted_day == day:
                delete_line(root, d.day, d.text)
                world.deleted_day[d.id] = day
        write_note(root, day, by_day[day])
        ws.reload()
        memory_for(ws).sync()
        agent = Agent(ws, client=model, session_key=f"{p.name}-{day}")
        for i, q in enumerate(questions_for(p, day)):
            set_now(day, 8 + (i * 37) // 60 % 12, (i * 37) % 60)
            model.start(q, f"{p.name}-{day}-{i}")
            agent.turn(q.ask.message)
            world.turns += 1
        set_now(day, 22)
        agent.end_session("end")
        agent.close()
        set_now(day, 23)
        ws.reload()
        t0 = time.perf_counter()
        ws.dream()
        world.dream_seconds.append(time.perf_counter() - t0)
        if p.verdicts:
            review_queue(ws, world, day)
        now = memory_entries(root)
        for text in now:
            if text not in seen:
                world.timeline.append((day, text))
        world.dropped.extend((day, text) for text in seen - set(now) if (day, text) not in world.dropped)
        seen = set(now)
        progress(f"{p.name} day {day}: {len(now)} entries")
    return world
