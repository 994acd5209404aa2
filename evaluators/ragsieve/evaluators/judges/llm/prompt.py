"""What an LLM judge sends: packaged prompts, one-pass filling, and redacted, defanged fields."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from ragsieve.evaluators.judges.llm.client import LLMConfig
from ragsieve.evaluators.judges.offline.conversation import judged_question
from ragsieve.evaluators.records import RagInteraction
from ragsieve.evaluators.tools.redact import redact

_PLACEHOLDER = re.compile(
    r"\{(question|judged_question|conversation|context|answer|chunks|n_questions|fence)\}"
)
_MARKER = re.compile(r"<{3,}|>{3,}")


@lru_cache(maxsize=8)
def load_prompt(name: str) -> tuple[str, str]:
    """Return ``(template, prompt_version)`` of a packaged prompt; the version is its hash."""
    base = resources.files("ragsieve.evaluators.judges.llm") / "prompts"
    text = (
        (base / "_preamble.md").read_text("utf-8") + "\n" + (base / f"{name}.md").read_text("utf-8")
    )
    return text, f"{name}@" + hashlib.sha256(text.encode()).hexdigest()[:12]


def fill(template: str, values: dict[str, str]) -> str:
    """Fill the known ``{placeholders}`` in ONE pass, so a ``{answer}`` inside traced text stays
    literal instead of receiving the answer."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def neutralise(text: str) -> tuple[str, int]:
    """Replace ``<<<``/``>>>`` runs in traced text with guillemets: they cannot pose as a fence."""
    return _MARKER.subn(lambda m: "\u00ab" if m.group(0)[0] == "<" else "\u00bb", text)


NO_CONVERSATION = "(none: this is the conversation's first turn)"


def turn_fields(x: RagInteraction) -> dict[str, str]:
    """The turn as the relevance judges send it: the question as typed, the question judged
    (a follow-up's standalone meaning, :func:`judged_question`) and the last turns before it."""
    asked = judged_question(x)
    return {
        "question": asked.typed or (x.query or ""),
        "judged_question": asked.text or (x.query or ""),
        "conversation": asked.conversation() or NO_CONVERSATION,
    }


def sent_fields(raw: dict[str, str], config: LLMConfig, meta: dict[str, Any]) -> dict[str, str]:
    """What leaves the machine: PII redacted (counted) and fence-like markers neutralised."""
    sent, redactions, neutralised = dict(raw), dict[str, int](), 0
    for k, v in raw.items():
        if config.redact_pii:
            v, counts = redact(v, config.extra_pii_patterns)
            for kind, n in counts.items():
                redactions[kind] = redactions.get(kind, 0) + n
        sent[k], n_markers = neutralise(v)
        neutralised += n_markers
    if config.redact_pii:
        meta["pii_redactions"] = redactions
    if neutralised:
        meta["fence_markers_neutralised"] = neutralised
    return sent
