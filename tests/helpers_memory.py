"""Memory test helpers: the real embedding model (loaded once per session), a counting wrapper,
and small deterministic corpora."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest


class CountingEmbedder:
    """Wraps the real embedder and records every text it is asked to encode."""

    def __init__(self, inner):
        self.inner = inner
        self.model_id = inner.model_id
        self.calls = 0
        self.texts: list[str] = []

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        return self.inner.encode(texts)

    def reset(self) -> None:
        self.calls = 0
        self.texts = []


@pytest.fixture
def counting(real_embedder) -> CountingEmbedder:
    return CountingEmbedder(real_embedder)


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


FILLER_TOPICS = (
    "Bought a new {0} for the kitchen and it works well.",
    "Read two chapters of a book about {0} history.",
    "Called the plumber about the {0} in the bathroom.",
    "Went for a run along the river, {0} kilometres.",
    "Tried a recipe with {0} and roasted vegetables.",
    "Fixed a flaky CI job in the {0} repository.",
    "Paid the {0} bill and filed the receipt.",
    "Watched a documentary about {0} migration.",
)
FILLER_WORDS = ("kettle", "lantern", "walnut", "harbour", "cobalt", "juniper", "meadow", "granite",
                "saffron", "tundra", "orchid", "pewter", "quartz", "willow", "ember", "falcon")


def filler_note(i: int) -> str:
    """A deterministic note of three unrelated everyday claims."""
    lines = []
    for k in range(3):
        template = FILLER_TOPICS[(i + k * 3) % len(FILLER_TOPICS)]
        lines.append("- " + template.format(FILLER_WORDS[(i * 7 + k * 5) % len(FILLER_WORDS)]))
    return "\n".join(lines) + "\n"


def undated_filler(root: Path, count: int, folder: str = "memory/topics") -> list[str]:
    """`count` evergreen filler files (no date, no decay) so BM25 has a real corpus to work with."""
    rels = []
    for i in range(count):
        rel = f"{folder}/filler-{i:03d}.md"
        write(root, rel, f"# Filler {i}\n\n{filler_note(i)}")
        rels.append(rel)
    return rels


# a fixed text set for backend parity (onnx, numpy vs sentence-transformers): empty and tiny texts,
# CJK and other scripts, code, URLs, numbers, and texts over the 256-token limit
LONG = " ".join(f"Paragraph {i}: the staging cluster was rebuilt after the billing service migration "
                f"and the on-call rota changed again." for i in range(40))  # well over 256 tokens

PARITY_TEXTS = [
    "",
    " ",
    "a",
    "hi",
    "peanut allergy",
    "Alice prefers oat milk in a flat white.",
    "Deploys happen on Tuesdays after standup; rollback plan pinned for 48 hours.",
    "what milk does Alice like",
    "The quick brown fox jumps over the lazy dog.",
    "Postgres 16 listens on port 5433 in staging, 5432 in production.",
    "東京は日本の首都です。",
    "我们周四发布新版本，请提前准备回滚方案。",
    "한국어 문장도 잘 처리되어야 합니다.",
    "Ünïcödé ÀÇÇÊNTS and ß ligatures — “quotes” and…ellipses",
    "emoji 🎉🚀 in a note 👍",
    "def f(x):\n    return x ** 2  # square it\n",
    "SELECT id, name FROM users WHERE created_at > NOW() - INTERVAL '7 days';",
    "```sh\nmake step-3 TARGET=4 && kubectl rollout restart deploy/api\n```",
    "# 2026-05-07\n\n- Grandma wants lilies rather than roses\n- dentist next Tuesday",
    "https://example.com/path?query=1&x=y#frag",
    "1234567890 3.14159 2.71828 -42 1e-9",
    "UPPER CASE SHOUTING ABOUT THE Q3 BUDGET",
    "   leading and trailing whitespace   ",
    "tab\tseparated\tvalues\nand\nnewlines",
    "A very very very very very very very very very very very very very very repetitive sentence.",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "Priya asked about the Lisbon client: invoice template in Finance (ref 12).",
    LONG,
    LONG + " and a tail that truncation drops",
    "Café naïve résumé — déjà vu",
]


def record_model_loads(monkeypatch) -> list:
    """Each real load of the ONNX model from here on appends its embedder to the returned list
    (the model still loads: the count is of real loads, not of a stand-in)."""
    from helpers_spy import spy
    from kit.memory.onnx_embedder import OnnxEmbedder

    return spy(monkeypatch, OnnxEmbedder, "_load", lambda embedder, folder: embedder)
