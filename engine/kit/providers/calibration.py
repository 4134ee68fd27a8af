"""What Kit learns about each model from its replies, kept in `.kit/state.db` (table
`model_stats`): how the server's `prompt_tokens` compare with Kit's estimate, and whether the
server renders the tool list at all.

Kit estimates tokens without a tokenizer (kit.tokens: chars/4 × 1.2). Each reply that reports
`prompt_tokens` moves the model's factor (real ÷ raw estimate) towards what it saw — the first
sample sets it, later ones weigh `ALPHA` — so the context estimate that drives compaction reads
close to what the server really counts. When a server's chat template drops the tools, their
schemas are left out of the estimate for that model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kit import clock
from kit.tokens import messages_tokens, tools_tokens

if TYPE_CHECKING:  # pragma: no cover
    from kit.core import WorkspaceCore
    from kit.state import StateDB

ALPHA = 0.3  # weight of a new sample in the factor's moving average
FACTOR_RANGE = (0.25, 4.0)  # a ratio outside this is a server quirk, not the tokenizer

MIGRATIONS = (
    """CREATE TABLE IF NOT EXISTS model_stats (
        target TEXT PRIMARY KEY,
        token_factor REAL,
        samples INTEGER NOT NULL DEFAULT 0,
        tools_rendered INTEGER,
        tools_warned INTEGER NOT NULL DEFAULT 0,
        updated REAL NOT NULL
    )""",
)


@dataclass(frozen=True)
class ModelStats:
    target: str
    token_factor: float | None = None  # server prompt_tokens ÷ Kit's raw estimate
    samples: int = 0
    tools_rendered: bool | None = None  # None: not known yet
    tools_warned: bool = False

    def raw_estimate(self, messages: list[dict], tools: list[dict] | None) -> int:
        """Kit's uncalibrated estimate of a request; tools count unless the server drops them."""
        return messages_tokens(messages) + (tools_tokens(tools or []) if self.tools_rendered is not False else 0)

    def estimate(self, messages: list[dict], tools: list[dict] | None) -> int:
        raw = self.raw_estimate(messages, tools)
        return round(raw * self.token_factor) if self.token_factor else raw

    def to_json(self) -> dict[str, object]:
        return {"target": self.target, "token_factor": self.token_factor, "samples": self.samples,
                "tools_rendered": self.tools_rendered}


def next_factor(before: float | None, raw: int, real: int) -> float | None:
    if raw <= 0 or real <= 0:
        return before
    ratio = min(max(real / raw, FACTOR_RANGE[0]), FACTOR_RANGE[1])
    return ratio if before is None else (1 - ALPHA) * before + ALPHA * ratio


class ModelStatsStore:
    """`model_stats` in state.db; a short-lived connection per call keeps threads apart."""

    def __init__(self, ws: WorkspaceCore):
        self.ws = ws

    def _db(self) -> StateDB:
        return self.ws.open_state("model_stats", MIGRATIONS)

    def get(self, target: str) -> ModelStats:
        with self._db() as db:
            row = db.execute("SELECT * FROM model_stats WHERE target = ?", (target,)).fetchone()
        return _row(row) if row else ModelStats(target)

    def all(self) -> list[ModelStats]:
        with self._db() as db:
            rows = db.execute("SELECT * FROM model_stats ORDER BY target").fetchall()
        return [_row(r) for r in rows]

    def save(self, stats: ModelStats) -> None:
        with self._db() as db:
            db.execute(
                "INSERT INTO model_stats(target, token_factor, samples, tools_rendered, tools_warned, updated) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(target) DO UPDATE SET token_factor = excluded.token_factor, "
                "samples = excluded.samples, tools_rendered = excluded.tools_rendered, "
                "tools_warned = excluded.tools_warned, updated = excluded.updated",
                (stats.target, stats.token_factor, stats.samples,
                 None if stats.tools_rendered is None else int(stats.tools_rendered),
                 int(stats.tools_warned), clock.timestamp()),
            )


def _row(row) -> ModelStats:
    rendered = row["tools_rendered"]
    return ModelStats(row["target"], row["token_factor"], int(row["samples"]),
                      None if rendered is None else bool(rendered), bool(row["tools_warned"]))
