"""Build the ONNX graph of a sentence-transformers BERT model from its safetensors weights.

No torch, ever: the graph is written node by node with the `onnx` package, mirroring the forward pass
of `transformers`' BertModel (embeddings + LayerNorm, N encoder layers of masked multi-head
self-attention and a GELU feed-forward, post-LayerNorm) followed by sentence-transformers' mean
pooling over the attention mask and L2 normalisation, so the graph's one output is the sentence
vector. It is the same computation as `kit.memory.numpy_embedder`, and gives the same vectors as
sentence-transformers (tests hold cosine ≥ 0.9999). Standard operators only (opset 17): ONNX
Runtime's own optimisations fuse the bias GELU and the scaled query·key product at load time. Its
offline transformer optimizer (fused Attention / SkipLayerNormalization / BiasGelu) gave the same
vectors for the same CPU (1.008×, bench/_onnx_sweep.py: the matrix products are the work), so the
file stays plain ONNX that any runtime and `onnx.checker` accept.

The build is deterministic: fixed node names and order, weights in a fixed order, pinned IR and
opset versions and no timestamps, so the same weights always give the same bytes (and the same
sha256). `ensure_model` keeps the result under the user's data dir (`$XDG_DATA_HOME/kit/models/`)
with a manifest of hashes; a missing or damaged file is built again. `quantize: int8` adds an int8
copy made by ONNX Runtime's dynamic quantisation (weights of the matrix products in int8).
A new graph layout must bump BUILDER_VERSION: cached files of another version are rebuilt.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kit.fsutil import atomic_write, file_signature
from kit.memory.model_files import BertConfig, load_weights, weight
from kit.paths import xdg_data_home

BUILDER_VERSION = 1  # bump when the graph changes: cached models of another version are rebuilt
OPSET = 17  # LayerNormalization is a standard operator from 17
IR_VERSION = 8  # pinned (not the onnx package's default) so the bytes do not depend on its version
SOURCE_FILES = ("config.json", "model.safetensors", "sentence_bert_config.json", "1_Pooling/config.json")
QUANTIZATIONS = ("none", "int8")


class _Graph:
    """A tiny helper over onnx.helper: named nodes and initializers, in the order they are added."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str, **attrs: Any) -> str:
        self.nodes.append(self.helper.make_node(op_type, inputs, [name], name=name, **attrs))
        return name


def build_model(folder: Path) -> bytes:
    """The serialized ONNX model (inputs input_ids, attention_mask, token_type_ids: int64 (batch,
    tokens); output sentence_embedding: float32 (batch, dim), unit length)."""
    from onnx import TensorProto, helper

    config = BertConfig.read(folder)
    w = functools.partial(weight, load_weights(folder), folder)

    g = _Graph()
    f32 = np.float32
    heads, head_dim, hidden = config.heads, config.head_dim, config.hidden
    one = g.const("one", np.array(1.0, dtype=f32))
    half = g.const("half", np.array(0.5, dtype=f32))
    split_shape = g.const("heads_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_shape = g.const("hidden_shape", np.array([0, 0, hidden], dtype=np.int64))
    axis1 = g.const("axis_1", np.array([1], dtype=np.int64))
    axis_last = g.const("axis_last", np.array([-1], dtype=np.int64))

    # embeddings: word + position (0..L-1) + token type, then LayerNorm
    word = g.op("Gather", [g.const("word_embeddings", w("embeddings.word_embeddings.weight")), "input_ids"], "word")
    length = g.op("Shape", ["input_ids"], "length", start=1, end=2)  # [L], 1-D
    position = g.op("Slice", [g.const("position_embeddings", w("embeddings.position_embeddings.weight")),
                              g.const("zero_start", np.array([0], dtype=np.int64)), length,
                              g.const("axis_0", np.array([0], dtype=np.int64))], "position")  # rows 0..L-1
    token_type = g.op("Gather", [g.const("token_type_embeddings", w("embeddings.token_type_embeddings.weight")),
                                 "token_type_ids"], "token_type")
    x = g.op("Add", [g.op("Add", [word, position], "word_position"), token_type], "embeddings_sum")
    x = g.op("LayerNormalization", [x, g.const("embeddings_ln_weight", w("embeddings.LayerNorm.weight")),
                                    g.const("embeddings_ln_bias", w("embeddings.LayerNorm.bias"))],
             "embeddings_out", axis=-1, epsilon=config.eps)

    # additive attention mask over keys: (1 - mask) · float32 min, shape (B, 1, 1, L), as transformers
    mask_4d = g.op("Unsqueeze", ["attention_mask", g.const("axes_1_2", np.array([1, 2], dtype=np.int64))], "mask_4d")
    inverted = g.op("Sub", [one, g.op("Cast", [mask_4d], "mask_4d_float", to=TensorProto.FLOAT)], "mask_inverted")
    mask_bias = g.op("Mul", [inverted, g.const("mask_min", np.array(np.finfo(f32).min, dtype=f32))], "mask_bias")
    scale = g.const("attention_scale", np.array(np.sqrt(head_dim), dtype=f32))

    def dense(x: str, prefix: str, name: str) -> str:
        # torch's Linear keeps (out, in); MatMul wants (in, out)
        product = g.op("MatMul", [x, g.const(f"{name}_weight", w(prefix + ".weight").T)], f"{name}_matmul")
        return g.op("Add", [product, g.const(f"{name}_bias", w(prefix + ".bias"))], f"{name}_out")

    def layer_norm(x: str, prefix: str, name: str) -> str:
        return g.op("LayerNormalization", [x, g.const(f"{name}_weight", w(prefix + ".weight")),
                                           g.const(f"{name}_bias", w(prefix + ".bias"))],
                    f"{name}_out", axis=-1, epsilon=config.eps)

    def activation(x: str, name: str) -> str:
        if config.activation == "gelu":  # exact: x · ½ · (1 + erf(x / √2))
            scaled = g.op("Div", [x, g.const(f"{name}_sqrt2", np.array(np.sqrt(2.0), dtype=f32))], f"{name}_scaled")
            erf_plus_1 = g.op("Add", [g.op("Erf", [scaled], f"{name}_erf"), one], f"{name}_erf_plus_1")
            return g.op("Mul", [g.op("Mul", [x, erf_plus_1], f"{name}_product"), half], f"{name}_out")
        if config.activation == "relu":
            return g.op("Relu", [x], f"{name}_out")
        # the tanh approximation (gelu_new, gelu_pytorch_tanh): ½x(1 + tanh(√(2/π)(x + 0.044715x³)))
        cube = g.op("Mul", [g.op("Mul", [x, x], f"{name}_square"), x], f"{name}_cube")
        inner = g.op("Add", [x, g.op("Mul", [cube, g.const(f"{name}_c", np.array(0.044715, dtype=f32))],
                                     f"{name}_cube_scaled")], f"{name}_inner")
        scaled = g.op("Mul", [inner, g.const(f"{name}_k", np.array(np.sqrt(2.0 / np.pi), dtype=f32))], f"{name}_ks")
        tanh_plus_1 = g.op("Add", [g.op("Tanh", [scaled], f"{name}_tanh"), one], f"{name}_tanh_plus_1")
        return g.op("Mul", [g.op("Mul", [x, tanh_plus_1], f"{name}_product"), half], f"{name}_out")

    def heads_of(x: str, name: str, perm: list[int]) -> str:
        return g.op("Transpose", [g.op("Reshape", [x, split_shape], f"{name}_heads")], f"{name}_t", perm=perm)

    for i in range(config.layers):
        p, n = f"encoder.layer.{i}.", f"layer{i}"
        q = heads_of(dense(x, p + "attention.self.query", f"{n}_query"), f"{n}_query", [0, 2, 1, 3])  # (B,H,L,d)
        k = heads_of(dense(x, p + "attention.self.key", f"{n}_key"), f"{n}_key", [0, 2, 3, 1])  # (B,H,d,L)
        v = heads_of(dense(x, p + "attention.self.value", f"{n}_value"), f"{n}_value", [0, 2, 1, 3])
        scores = g.op("Div", [g.op("MatMul", [q, k], f"{n}_qk"), scale], f"{n}_scores_scaled")
        probs = g.op("Softmax", [g.op("Add", [scores, mask_bias], f"{n}_scores_masked")], f"{n}_probs", axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probs, v], f"{n}_context_heads")], f"{n}_context_t",
                       perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, merge_shape], f"{n}_context")
        attended = g.op("Add", [dense(context, p + "attention.output.dense", f"{n}_attention_output"), x],
                        f"{n}_attention_residual")
        x = layer_norm(attended, p + "attention.output.LayerNorm", f"{n}_attention_ln")
        inner = activation(dense(x, p + "intermediate.dense", f"{n}_intermediate"), f"{n}_activation")
        x = layer_norm(g.op("Add", [dense(inner, p + "output.dense", f"{n}_output"), x], f"{n}_output_residual"),
                       p + "output.LayerNorm", f"{n}_output_ln")

    # mean pooling over the attention mask, then L2 normalisation (sentence-transformers' Normalize)
    weights_3d = g.op("Cast", [g.op("Unsqueeze", ["attention_mask", axis_last], "mask_3d")], "mask_3d_float",
                      to=TensorProto.FLOAT)
    summed = g.op("ReduceSum", [g.op("Mul", [x, weights_3d], "masked_tokens"), axis1], "token_sum", keepdims=0)
    counts = g.op("Max", [g.op("ReduceSum", [weights_3d, axis1], "token_count", keepdims=0),
                          g.const("min_count", np.array(1e-9, dtype=f32))], "token_count_clamped")
    mean = g.op("Div", [summed, counts], "mean_pooled")
    norm = g.op("Max", [g.op("ReduceL2", [mean], "norm", axes=[1], keepdims=1),
                        g.const("min_norm", np.array(1e-12, dtype=f32))], "norm_clamped")
    g.nodes.append(helper.make_node("Div", [mean, norm], ["sentence_embedding"], name="sentence_embedding"))

    tokens = ["batch", "tokens"]
    graph = helper.make_graph(
        g.nodes, "kit_sentence_bert",
        [helper.make_tensor_value_info(name, TensorProto.INT64, tokens)
         for name in ("input_ids", "attention_mask", "token_type_ids")],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", config.dim])],
        initializer=g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="kit-agent", producer_version=str(BUILDER_VERSION))
    model.ir_version = IR_VERSION
    return model.SerializeToString()


class _NoPreprocessingAdvice(logging.Filter):
    """Drops the quantizer's "Please consider to run pre-processing before quantization" warning,
    which it logs on the root logger: `kit watch` would print it when kit.yaml switches to int8."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def quantize_int8(source: Path, target: Path) -> None:
    """ONNX Runtime's dynamic quantisation: the weights of the matrix products to int8 per output
    channel, activations quantised per batch.

    Measured on the parity texts: per-channel scales and a 7-bit range (no saturation in AVX2's
    u8·s8 products) give cosine to fp32 ≥ 0.980 (mean 0.991); one scale per tensor gave 0.905."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    quiet = _NoPreprocessingAdvice()
    logging.getLogger().addFilter(quiet)
    try:
        quantize_dynamic(str(source), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                         reduce_range=True, op_types_to_quantize=["MatMul"])
        os.replace(tmp, target)
    finally:
        logging.getLogger().removeFilter(quiet)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


# --------------------------------------------------------------------------- the cache on disk


def models_dir() -> Path:
    return xdg_data_home() / "kit" / "models"


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def source_sha256(folder: Path) -> str:
    """One hash over the files the graph is built from (names and bytes)."""
    digest = hashlib.sha256()
    for name in SOURCE_FILES:
        path = folder / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + _file_sha256(path).encode() + b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class OnnxModel:
    path: Path  # the .onnx file ONNX Runtime loads
    sha256: str
    source_sha256: str  # of the weights and config it was built from
    quantize: str  # none | int8
    built: bool  # built (or rebuilt) by this call rather than found in the cache


def cache_folder(folder: Path) -> Path:
    """Where the ONNX files of the model in `folder` are kept: named after the folder and its path."""
    resolved = str(folder.resolve())
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", folder.resolve().parent.name + "-" + folder.name).strip("-")[:60]
    return models_dir() / f"{slug}-{hashlib.sha1(resolved.encode()).hexdigest()[:10]}"


def ensure_model(folder: Path, quantize: str = "none") -> OnnxModel:
    """The ONNX file for the model in `folder` (fp32, or int8 with `quantize`), built when missing,
    damaged or made from other weights or by another builder version.

    The manifest beside it records each file's sha256 with its size and mtime: an unchanged file is
    trusted by its stat (no 90 MB hash per process); a changed stat means a full hash check."""
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize must be one of {', '.join(QUANTIZATIONS)}, not {quantize!r}")
    home = cache_folder(folder)
    manifest_path = home / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("builder") != BUILDER_VERSION:
            manifest = {}
    except (OSError, ValueError):
        manifest = {}
    sources = {name: file_signature(folder / name) for name in SOURCE_FILES}
    if manifest.get("sources") != sources or not manifest.get("source_sha256"):
        source_hash = source_sha256(folder)
        if manifest.get("source_sha256") != source_hash:
            manifest = {}
        manifest.update(builder=BUILDER_VERSION, source=str(folder.resolve()), sources=sources,
                        source_sha256=source_hash)
    files: dict[str, Any] = manifest.setdefault("files", {})
    built = False

    def usable(name: str) -> bool:
        record = files.get(name)
        path = home / name
        if not record or not path.is_file():
            return False
        if file_signature(path) == record.get("stat"):
            return True
        if _file_sha256(path) == record.get("sha256"):  # touched or copied, same bytes
            record["stat"] = file_signature(path)
            return True
        return False

    def record(name: str) -> None:
        path = home / name
        files[name] = {"sha256": _file_sha256(path), "stat": file_signature(path)}

    home.mkdir(parents=True, exist_ok=True)
    if not usable("model.onnx"):
        atomic_write(home / "model.onnx", build_model(folder))
        record("model.onnx")
        files.pop("model.int8.onnx", None)  # made from the old file
        built = True
    name = "model.onnx"
    if quantize == "int8":
        name = "model.int8.onnx"
        if not usable(name):
            quantize_int8(home / "model.onnx", home / name)
            record(name)
            built = True
    if built or json.dumps(manifest, sort_keys=True) != _read(manifest_path):
        atomic_write(manifest_path, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return OnnxModel(home / name, files[name]["sha256"], manifest["source_sha256"], quantize, built)


def _read(path: Path) -> str | None:
    try:
        return json.dumps(json.loads(path.read_text(encoding="utf-8")), sort_keys=True)
    except (OSError, ValueError):
        return None


def is_built(folder: Path, quantize: str = "none") -> bool:
    """True when the cache already holds this model's ONNX file (by the manifest; nothing is hashed)."""
    home = cache_folder(folder)
    name = "model.int8.onnx" if quantize == "int8" else "model.onnx"
    try:
        manifest = json.loads((home / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    record = manifest.get("files", {}).get(name)
    return bool(manifest.get("builder") == BUILDER_VERSION and record and file_signature(home / name) == record.get("stat"))
