"""Model-name families: which vendor a judge or generator model is from, and o-series names."""

from __future__ import annotations

import re

# Known model families: (pattern matched at the start of a name segment, family). A segment is a
# piece of the name between ``/``, ``.`` and ``:`` ("bedrock/anthropic.claude-3-haiku-v1:0").
# The negative lookahead keeps "phind" out of phi and "yinyang" out of yi.
_FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rf"(?:{pat})(?![a-z])"), fam)
    for pat, fam in (
        (r"chatgpt|gpt", "gpt"),
        (r"o[1-9](?![0-9])", "gpt"),
        (r"claude", "claude"),
        (r"gemini", "gemini"),
        (r"gemma", "gemma"),
        (r"(?:meta-)?llama", "llama"),
        (r"mistral|ministral|mixtral|codestral|magistral|pixtral|devstral", "mistral"),
        (r"qwen|qwq", "qwen"),
        (r"deepseek", "deepseek"),
        (r"phi", "phi"),
        (r"command|c4ai-command", "command"),
        (r"granite", "granite"),
        (r"yi", "yi"),
        (r"falcon", "falcon"),
    )
)
_O_SERIES = re.compile(r"(?:^|[/.:])o[1-9](?![0-9a-z])")


def model_family(model: str | None) -> str | None:
    """The vendor family of a model name ('openai/gpt-4o-mini' -> 'gpt'), or None if unknown.

    Only known families are recognised, on ``/ . :``-separated segments; an unknown name gives
    None so that two in-house names ("judge-1", "judge-2") never count as one family.
    """
    if not model:
        return None
    for segment in re.split(r"[/.:]", model.lower()):
        for pattern, fam in _FAMILIES:
            if pattern.match(segment):
                return fam
    return None


def is_reasoning_model(model: str) -> bool:
    """OpenAI o-series names (o1, o3-mini, openai/o4-mini...): no temperature, other token field."""
    return bool(_O_SERIES.search(model.lower()))
