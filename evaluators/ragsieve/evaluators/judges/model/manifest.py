"""What a model folder must hold, and what its manifest says the model does.

A usable folder holds an ONNX export (``model.onnx`` unless the manifest names another file), the
tokenizer it was trained with (``tokenizer.json``, the `tokenizers` format every Hugging Face
export writes) and a manifest, ``ragsieve-model.json`` (or the same fields given in settings)::

    {"name": "deberta-v3-base-mnli", "task": "pair", "max_length": 512,
     "labels": ["entailment", "neutral", "contradiction"],
     "support": ["entailment"], "contradict": ["contradiction"]}

``task`` is one of:

- ``pair``: (premise, hypothesis) → one logit per label (NLI, MiniCheck, HHEM); ``support`` names
  the labels whose probability backs the hypothesis, ``contradict`` those that refute it. One
  output logit (HHEM-style "consistent") reads as a sigmoid probability of support;
- ``token``: (context, answer) → per answer token one logit per label (LettuceDetect-style);
  ``hallucinated`` names the labels that mark a token the context does not back;
- ``relevance``: (query, passage) → one logit (a cross-encoder reranker), read as a sigmoid.

``labels`` may be left out when the folder's ``config.json`` (what ``optimum-cli export onnx``
and ``save_pretrained`` write) has ``id2label``. A folder that is not usable raises
:class:`ModelFolderError` (a ``ConfigError``: the CLI exits 2) naming the path and what is
missing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ragsieve.evaluators.errors import ConfigError

MANIFEST = "ragsieve-model.json"
Task = Literal["pair", "token", "relevance"]
TASKS: tuple[Task, ...] = ("pair", "token", "relevance")
# label names that mean "backs it" / "refutes it" / "not backed" when the manifest does not say
_SUPPORT = frozenset({"entailment", "entail", "supported", "consistent", "faithful", "true"})
_CONTRADICT = frozenset({"contradiction", "contradict", "refuted", "inconsistent"})
_HALLUCINATED = frozenset({"hallucinated", "hallucination", "unsupported"})


class ModelFolderError(ConfigError):
    """A model folder ragsieve cannot use; the message is ``<path>: <what is missing>``."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """One model's task and label mapping, read from its folder (and settings)."""

    folder: Path
    name: str
    task: Task
    labels: tuple[str, ...]
    max_length: int = 512
    model_file: str = "model.onnx"
    tokenizer_file: str = "tokenizer.json"
    support: frozenset[str] = frozenset()
    contradict: frozenset[str] = frozenset()
    hallucinated: frozenset[str] = frozenset()
    hypothesis_first: bool = False  # a model trained on (hypothesis, premise) pairs
    stride: int = 128  # tokens two neighbouring windows share (default: a quarter, at most 128)

    @property
    def model_path(self) -> Path:
        """The ONNX file."""
        return self.folder / self.model_file

    @property
    def tokenizer_path(self) -> Path:
        """The ``tokenizers`` JSON file."""
        return self.folder / self.tokenizer_file

    def index(self, names: frozenset[str]) -> list[int]:
        """Positions of ``names`` in the model's output labels."""
        return [i for i, label in enumerate(self.labels) if label in names]


def _labels(folder: Path, given: Any) -> tuple[str, ...]:
    if given is not None:
        if not isinstance(given, list) or not all(isinstance(x, str) for x in given) or not given:
            raise ModelFolderError(f"{folder / MANIFEST}: labels: must be a list of label names")
        return tuple(x.strip().lower() for x in given)
    config = folder / "config.json"
    if config.is_file():
        try:
            id2label = json.loads(config.read_text(encoding="utf-8")).get("id2label") or {}
            ordered = [str(id2label[k]) for k in sorted(id2label, key=int)]
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ModelFolderError(f"{config}: id2label: not readable ({exc})") from exc
        if ordered:
            return tuple(x.strip().lower() for x in ordered)
    return ()


def _names(folder: Path, raw: Mapping[str, Any], key: str, default: frozenset[str]) -> frozenset:
    value = raw.get(key)
    if value is None:
        return default
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise ModelFolderError(f"{folder / MANIFEST}: {key}: must be a label name or a list")
    return frozenset(x.strip().lower() for x in value)


def _read_json_object(file: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelFolderError(f"{file}: not JSON ({exc})") from exc
    if not isinstance(loaded, dict):
        raise ModelFolderError(f"{file}: must be a JSON object")
    return loaded


def read_manifest(path: str | Path, overrides: Mapping[str, Any] | None = None) -> Manifest:
    """The manifest of the model folder ``path``, ``overrides`` (settings) winning field by field.

    Raises :class:`ModelFolderError` naming the path and what is missing or wrong.
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        what = "not a folder" if folder.exists() else "no such folder"
        raise ModelFolderError(
            f"{folder}: {what} (a model folder holds model.onnx, tokenizer.json and {MANIFEST})"
        )
    file = folder / MANIFEST
    raw = _read_json_object(file) if file.is_file() else {}
    raw.update({k: v for k, v in (overrides or {}).items() if v is not None})
    if "task" not in raw:
        raise ModelFolderError(
            f"{folder}: no {MANIFEST} saying the model's task (pair, token or relevance)"
        )
    task = raw["task"]
    if task not in TASKS:
        raise ModelFolderError(f"{file}: task: must be pair, token or relevance (got {task!r})")
    labels = _labels(folder, raw.get("labels"))
    if not labels and task != "relevance":
        raise ModelFolderError(
            f"{file}: labels: missing (name the output labels in order, or ship config.json"
            " with id2label)"
        )
    try:
        max_length = int(raw.get("max_length", 512))
        stride = int(raw.get("stride", min(128, max_length // 4)))
    except (TypeError, ValueError) as exc:
        raise ModelFolderError(f"{file}: max_length/stride: must be integers ({exc})") from exc
    if max_length < 8 or not 0 <= stride < max_length // 2:
        raise ModelFolderError(f"{file}: max_length >= 8 and 0 <= stride < max_length/2 needed")
    found = Manifest(
        folder=folder,
        name=str(raw.get("name") or folder.name),
        task=task,
        labels=labels,
        max_length=max_length,
        model_file=str(raw.get("model_file", "model.onnx")),
        tokenizer_file=str(raw.get("tokenizer_file", "tokenizer.json")),
        support=_names(folder, raw, "support", _SUPPORT),
        contradict=_names(folder, raw, "contradict", _CONTRADICT),
        hallucinated=_names(folder, raw, "hallucinated", _HALLUCINATED),
        hypothesis_first=bool(raw.get("hypothesis_first", False)),
        stride=stride,
    )
    _check_labels(found, file)
    for need in (found.model_path, found.tokenizer_path):
        if not need.is_file():
            raise ModelFolderError(f"{need}: missing (the folder needs {need.name})")
    return found


def _check_labels(m: Manifest, file: Path) -> None:
    if m.task == "pair" and len(m.labels) > 1 and not m.index(m.support):
        raise ModelFolderError(
            f"{file}: support: none of the labels {', '.join(m.labels)} is named as support"
        )
    if m.task == "token" and not m.index(m.hallucinated):
        raise ModelFolderError(
            f"{file}: hallucinated: none of the labels {', '.join(m.labels)} marks a token"
            " as hallucinated"
        )


__all__ = ["MANIFEST", "TASKS", "Manifest", "ModelFolderError", "Task", "read_manifest"]
