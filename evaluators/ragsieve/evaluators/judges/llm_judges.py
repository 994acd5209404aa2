"""LLM judges: versioned prompt -> OpenAI-compatible call -> validated verdict -> EvalResult.

The pieces live in ``llm_prompt`` (rendering), ``llm_base`` (the cached judge flow) and
``llm_metrics`` (the three metric judges); this module keeps their names importable from here.
"""

from __future__ import annotations

from ragsieve.evaluators.judges.llm_base import CACHE_FORMAT, LLMJudge, log
from ragsieve.evaluators.judges.llm_metrics import (
    AnswerRelevanceVerdict,
    ContextRelevanceVerdict,
    FaithfulnessVerdict,
    LLMAnswerRelevanceJudge,
    LLMContextRelevanceJudge,
    LLMFaithfulnessJudge,
)
from ragsieve.evaluators.judges.llm_prompt import fill, load_prompt, neutralise

__all__ = [
    "CACHE_FORMAT",
    "AnswerRelevanceVerdict",
    "ContextRelevanceVerdict",
    "FaithfulnessVerdict",
    "LLMAnswerRelevanceJudge",
    "LLMContextRelevanceJudge",
    "LLMFaithfulnessJudge",
    "LLMJudge",
    "fill",
    "load_prompt",
    "log",
    "neutralise",
]
