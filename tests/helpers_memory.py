"""Memory test helpers: the real embedding model (loaded once per session), a counting wrapper,
and small deterministic corpora."""

from __future__ import annotations

import os
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


@pytest.fixture(scope="session")
def real_embedder():
    """The installed all-MiniLM-L6-v2, offline; the model loads once per test process."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from kit.memory.embeddings import load_embedder

    embedder = load_embedder(None)
    assert embedder is not None, "sentence-transformers must be installed for the memory tests"
    embedder.encode(["warm up"])
    return embedder


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
