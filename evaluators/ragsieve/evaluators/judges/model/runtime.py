"""One local model, loaded from its folder and run with onnxruntime on (text, text) pairs.

:class:`LocalModel` tokenises pairs with the folder's ``tokenizer.json``, runs them through the
ONNX graph in batches of ``batch_size`` on at most ``threads`` intra-op threads, and reads the
output as the manifest says (:mod:`.manifest`): a probability that the second text is backed by
the first (pair, token) or relevant to it (relevance). One model runs one batch at a time (a
lock), so a job's many judge calls in flight never multiply the threads. A time limit is checked
between batches: a trace over its time limit raises :class:`ModelTimeLimit`.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragsieve.evaluators.errors import ConfigError, JudgeError
from ragsieve.evaluators.judges.model.manifest import Manifest, ModelFolderError, read_manifest

FEEDABLE = ("input_ids", "attention_mask", "token_type_ids")


class ModelTimeLimit(JudgeError):
    """A trace's pairs did not finish within the per-trace time limit."""


@dataclass(frozen=True, slots=True)
class Scored:
    """What the model says about one pair: ``support`` in [0, 1] (backed, or relevant),
    ``contradict`` (pair models with a contradiction label), and for token models the
    hypothesis's spans it marks hallucinated, as ``(start, end, probability)`` characters."""

    support: float
    contradict: float | None = None
    spans: tuple[tuple[int, int, float], ...] = ()


@dataclass(slots=True)
class RunStats:
    """Session runs, pairs scored and seconds spent in them since the model was loaded."""

    runs: int = 0
    pairs: int = 0
    seconds: float = 0.0


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return np.asarray(z / z.sum(axis=-1, keepdims=True))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


class LocalModel:
    """A model folder loaded for inference (never downloaded: the folder is all it reads)."""

    def __init__(self, manifest: Manifest, *, threads: int = 1) -> None:
        try:
            import onnxruntime as ort  # type: ignore[import-untyped]
            from tokenizers import Tokenizer
        except ImportError as exc:  # the optional extra is not installed: one line, exit 2
            from ragsieve.evaluators.tools.extras import missing

            raise missing("model", f"{manifest.folder}: the model tier", exc.name) from exc
        if threads < 1:
            raise ConfigError(f"model.threads: must be >= 1 (got {threads})")
        self.manifest, self.threads = manifest, threads
        self.sha256 = _sha256(manifest.model_path)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        try:
            self.session = ort.InferenceSession(
                str(manifest.model_path), opts, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own classes for every load failure
            raise ModelFolderError(
                f"{manifest.model_path}: not an ONNX model onnxruntime can load ({exc})"
            ) from exc
        self.inputs = {i.name: i for i in self.session.get_inputs()}
        unknown = sorted(set(self.inputs) - set(FEEDABLE))
        if unknown or "input_ids" not in self.inputs:
            what = f"wants input {unknown[0]!r}" if unknown else "has no input 'input_ids'"
            raise ModelFolderError(
                f"{manifest.model_path}: {what} (ragsieve feeds {', '.join(FEEDABLE)})"
            )
        try:
            self.tokenizer = Tokenizer.from_file(str(manifest.tokenizer_path))
        except Exception as exc:  # tokenizers raises a bare Exception on a bad file
            raise ModelFolderError(
                f"{manifest.tokenizer_path}: not a tokenizers file ({exc})"
            ) from exc
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.specials = self.tokenizer.num_special_tokens_to_add(True)
        self.pad_id = self._pad_id()
        self._check_output()
        self.lock = threading.Lock()
        self.stats = RunStats()

    @property
    def label(self) -> str:
        """What ``judge_model`` records: the model's name and its file's hash prefix."""
        return f"{self.manifest.name} (onnx sha256:{self.sha256[:12]})"

    def _pad_id(self) -> int:
        for token in ("[PAD]", "<pad>", "<|pad|>"):
            found = self.tokenizer.token_to_id(token)
            if found is not None:
                return int(found)
        return 0

    def _check_output(self) -> None:
        out = self.session.get_outputs()[0]
        shape = list(out.shape or ())
        want = 1 if self.manifest.task == "relevance" else len(self.manifest.labels)
        rank = 3 if self.manifest.task == "token" else 2
        ranks = {rank, rank - 1} if want == 1 and rank == 2 else {rank}
        if len(shape) not in ranks:
            raise ModelFolderError(
                f"{self.manifest.model_path}: output {out.name!r} has rank {len(shape)};"
                f" a {self.manifest.task} model gives rank {rank}"
            )
        last = shape[-1] if len(shape) == rank else 1
        if isinstance(last, int) and last != want:
            raise ModelFolderError(
                f"{self.manifest.model_path}: output {out.name!r} gives {last} logits but the"
                f" manifest names {want} label(s)"
            )

    def tokens(self, text: str) -> list[tuple[int, int]]:
        """Character offsets of ``text``'s tokens (no special tokens): what windows are cut by."""
        return [o for o in self.tokenizer.encode(text, add_special_tokens=False).offsets]

    def score(
        self,
        pairs: Sequence[tuple[str, str]],
        *,
        batch_size: int = 8,
        time_limit_s: float | None = None,
    ) -> list[Scored]:
        """Score ``(premise, hypothesis)`` pairs (query, passage for a reranker), in order.

        Raises :class:`ModelTimeLimit` when ``time_limit_s`` (counted from when this call gets
        the model, not while it waits for another's batch) passes between two batches; the
        first batch always runs.
        """
        if batch_size < 1:
            raise ConfigError(f"model.batch_size: must be >= 1 (got {batch_size})")
        out: list[Scored] = []
        with self.lock:
            deadline = None if time_limit_s is None else time.monotonic() + time_limit_s
            for start in range(0, len(pairs), batch_size):
                if start and deadline is not None and time.monotonic() > deadline:
                    raise ModelTimeLimit(f"time limit reached after {start} of {len(pairs)} pairs")
                out.extend(self._batch(pairs[start : start + batch_size]))
        return out

    def _batch(self, pairs: Sequence[tuple[str, str]]) -> list[Scored]:
        m = self.manifest
        ordered = [(b, a) if m.hypothesis_first else (a, b) for a, b in pairs]
        self.tokenizer.enable_truncation(m.max_length, strategy="longest_first")
        try:
            encs = self.tokenizer.encode_batch(ordered)
        finally:
            self.tokenizer.no_truncation()
        width = max(len(e.ids) for e in encs)
        feeds: dict[str, np.ndarray] = {}
        ids = np.full((len(encs), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(encs), width), dtype=np.int64)
        types = np.zeros((len(encs), width), dtype=np.int64)
        for row, e in enumerate(encs):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = e.attention_mask
            types[row, : len(e.ids)] = e.type_ids
        for name, arr in (("input_ids", ids), ("attention_mask", mask), ("token_type_ids", types)):
            if name in self.inputs:
                want_int32 = self.inputs[name].type == "tensor(int32)"
                feeds[name] = arr.astype(np.int32) if want_int32 else arr
        t0 = time.perf_counter()
        logits = np.asarray(self.session.run(None, feeds)[0], dtype=np.float64)
        self.stats.runs += 1
        self.stats.pairs += len(pairs)
        self.stats.seconds += time.perf_counter() - t0
        if m.task == "token":
            hyp_seq = 0 if m.hypothesis_first else 1
            return [self._token(logits[row], e, hyp_seq) for row, e in enumerate(encs)]
        return [self._pair(logits[row]) for row in range(len(encs))]

    def _pair(self, row: np.ndarray) -> Scored:
        row = row.reshape(-1)
        if row.size == 1:
            return Scored(float(_sigmoid(row)[0]))
        probs = _softmax(row)
        m = self.manifest
        contra = m.index(m.contradict)
        return Scored(
            float(probs[m.index(m.support)].sum()),
            float(probs[contra].sum()) if contra else None,
        )

    def _token(self, rows: np.ndarray, enc: Any, hyp_seq: int) -> Scored:
        m = self.manifest
        probs = _softmax(rows) if rows.shape[-1] > 1 else _sigmoid(rows)
        bad = m.index(m.hallucinated) if rows.shape[-1] > 1 else [0]
        spans: list[tuple[int, int, float]] = []
        worst = 0.0
        for i, seq in enumerate(enc.sequence_ids):
            if seq != hyp_seq or enc.special_tokens_mask[i]:
                continue
            p = float(probs[i, bad].sum())
            worst = max(worst, p)
            if p >= 0.5:
                s, e = enc.offsets[i]
                if spans and s - spans[-1][1] <= 1:  # a neighbour: one span
                    spans[-1] = (spans[-1][0], e, max(spans[-1][2], p))
                else:
                    spans.append((s, e, p))
        return Scored(1.0 - worst, None, tuple(spans))


@dataclass
class _Cache:
    models: dict[tuple[Any, ...], LocalModel] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_CACHE = _Cache()


def load_model(
    path: str | Path, *, threads: int = 1, overrides: Mapping[str, Any] | None = None
) -> LocalModel:
    """The model of folder ``path``, loaded once per process (per file, size, mtime, threads
    and manifest overrides): a job that builds its judges for every batch loads it once."""
    manifest = read_manifest(path, overrides)
    st = manifest.model_path.stat()
    key = (str(manifest.model_path.resolve()), st.st_size, st.st_mtime_ns, threads, manifest)
    with _CACHE.lock:
        if key not in _CACHE.models:
            _CACHE.models[key] = LocalModel(manifest, threads=threads)
        return _CACHE.models[key]


__all__ = ["LocalModel", "ModelTimeLimit", "RunStats", "Scored", "load_model"]
