"""Stand-in models: tiny real ONNX graphs and tokenizers, written to a folder like an export.

For tests, benches and trying the tier without a model on disk. Nothing here learns: each word of
a small vocabulary has a fixed feature vector, the graph looks the words up (``Gather``), zeroes
the padding (the attention mask), max-pools over the sequence (or keeps every token, for a token
model) and applies a linear head. Whoever builds one therefore knows which pairs it backs: a
pair whose text holds a word with a "support" feature, and so on. ``depth``/``width`` add
residual ReLU layers of that width (seeded random weights) to every token, so a bench can give
the graph the per-token matrix work of a small encoder; they change its verdicts, so keep
``depth=0`` where verdicts matter. Needs the ``onnx`` package (test extra).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragsieve.evaluators.judges.model.manifest import MANIFEST

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")


def write_tokenizer(folder: Path, words: Sequence[str]) -> dict[str, int]:
    """A lower-casing WordLevel ``tokenizer.json`` (BERT-style ``[CLS] a [SEP] b [SEP]``)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = {tok: i for i, tok in enumerate(SPECIALS)}
    for w in words:
        vocab.setdefault(w.lower(), len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    tok.save(str(folder / "tokenizer.json"))
    return vocab


def _graph(
    embed: np.ndarray, head: np.ndarray, bias: np.ndarray, pool: bool, depth: int, width: int
) -> Any:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    dim = embed.shape[1]
    inits = [
        numpy_helper.from_array(embed.astype(np.float32), "embed"),
        numpy_helper.from_array(head.astype(np.float32), "head"),
        numpy_helper.from_array(bias.astype(np.float32), "bias"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
    ]
    nodes = [
        helper.make_node("Gather", ["embed", "input_ids"], ["tok"]),
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "axis2"], ["mask3"]),
        helper.make_node("Mul", ["tok", "mask3"], ["x0"]),
    ]
    x = "x0"
    for i in range(depth):
        up = rng.normal(0, 0.02, (dim, width)).astype(np.float32)
        down = rng.normal(0, 0.02, (width, dim)).astype(np.float32)
        inits += [numpy_helper.from_array(up, f"up{i}"), numpy_helper.from_array(down, f"dn{i}")]
        nodes += [
            helper.make_node("MatMul", [x, f"up{i}"], [f"h{i}"]),
            helper.make_node("Relu", [f"h{i}"], [f"r{i}"]),
            helper.make_node("MatMul", [f"r{i}", f"dn{i}"], [f"d{i}"]),
            helper.make_node("Add", [x, f"d{i}"], [f"x{i + 1}"]),
        ]
        x = f"x{i + 1}"
    if pool:
        nodes.append(helper.make_node("ReduceMax", [x], ["pooled"], axes=[1], keepdims=0))
        x = "pooled"
    nodes += [
        helper.make_node("MatMul", [x, "head"], ["raw"]),
        helper.make_node("Add", ["raw", "bias"], ["logits"]),
    ]
    n_out = head.shape[1]
    shape: list[Any] = ["batch", n_out] if pool else ["batch", "seq", n_out]
    graph = helper.make_graph(
        nodes,
        "ragsieve-standin",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, shape)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def write_standin(
    folder: str | Path,
    *,
    task: str,
    features: Mapping[str, Sequence[float]],
    head: Sequence[Sequence[float]],
    bias: Sequence[float],
    manifest: Mapping[str, Any],
    depth: int = 0,
    width: int = 64,
) -> Path:
    """A model folder: ``tokenizer.json`` over ``features``' words, ``model.onnx`` (feature
    lookup, masked, max-pooled unless ``task`` is ``token``, then ``features @ head + bias``)
    and the manifest ``{"task": task, **manifest}``. Words outside ``features`` read as zeros."""
    import onnx

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    vocab = write_tokenizer(out, list(features))
    dim = len(next(iter(features.values())))
    embed = np.zeros((len(vocab), dim))
    for word, vec in features.items():
        embed[vocab[word.lower()]] = vec
    graph = _graph(
        embed, np.asarray(head, float), np.asarray(bias, float), task != "token", depth, width
    )
    onnx.save(graph, str(out / "model.onnx"))
    (out / MANIFEST).write_text(json.dumps({"task": task, **manifest}), encoding="utf-8")
    return out


def nli_standin(
    folder: str | Path,
    support: Sequence[str],
    contradict: Sequence[str] = (),
    other: Sequence[str] = (),
    *,
    labels: Sequence[str] = ("entailment", "neutral", "contradiction"),
    max_length: int = 64,
    **extra: Any,
) -> Path:
    """A pair model: a text holding a ``support`` word entails, a ``contradict`` word
    contradicts (it wins over support), anything else is neutral; ``labels`` sets the order of
    its outputs (entailment, neutral, contradiction by name)."""
    feats = {w: [1.0, 0.0] for w in support} | {w: [0.0, 1.0] for w in contradict}
    feats |= {w: [0.0, 0.0] for w in other if w not in feats}
    cols = {"entailment": ([6.0, -9.0], 0.0), "neutral": ([0.0, 0.0], 2.0)}
    cols["contradiction"] = ([0.0, 12.0], 0.0)
    head = [[cols[lab][0][d] for lab in labels] for d in range(2)]
    bias = [cols[lab][1] for lab in labels]
    manifest = {"name": "standin-nli", "labels": list(labels), "max_length": max_length, **extra}
    return write_standin(
        folder, task="pair", features=feats, head=head, bias=bias, manifest=manifest
    )


def token_standin(
    folder: str | Path,
    hallucinated: Sequence[str],
    other: Sequence[str] = (),
    *,
    max_length: int = 64,
    **extra: Any,
) -> Path:
    """A token model (labels ``supported``, ``hallucinated``): a ``hallucinated`` word is marked
    wherever it stands, every other token is supported."""
    feats = {w: [1.0] for w in hallucinated} | {w: [0.0] for w in other if w not in hallucinated}
    manifest = {
        "name": "standin-token",
        "labels": ["supported", "hallucinated"],
        "max_length": max_length,
        **extra,
    }
    return write_standin(
        folder, task="token", features=feats, head=[[0.0, 8.0]], bias=[0.0, -4.0], manifest=manifest
    )


def reranker_standin(
    folder: str | Path,
    relevant: Sequence[str],
    other: Sequence[str] = (),
    *,
    max_length: int = 64,
    **extra: Any,
) -> Path:
    """A reranker (one logit): a pair holding a ``relevant`` word scores sigmoid(4) ≈ 0.98,
    any other sigmoid(-4) ≈ 0.02."""
    feats = {w: [1.0] for w in relevant} | {w: [0.0] for w in other if w not in relevant}
    manifest = {"name": "standin-reranker", "max_length": max_length, **extra}
    return write_standin(
        folder, task="relevance", features=feats, head=[[8.0]], bias=[-4.0], manifest=manifest
    )


__all__ = ["nli_standin", "reranker_standin", "token_standin", "write_standin", "write_tokenizer"]
