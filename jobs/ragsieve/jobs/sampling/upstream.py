"""Upstream keep probability of a trace, read from the tail-sampling tier's attributes.

Behind a tail-sampling Collector tier (``deploy/otelcol/sampler.yaml``) the store holds only the
kept traces. The tier stamps ``rag.sampling.baseline_percentage`` on every kept trace and, with the
``processor.tailsamplingprocessor.recordpolicy`` feature gate, records the first policy that kept
it as ``tailsampling.policy`` (an instrumentation-scope attribute; the collector copies it into
``interaction.attributes``). A trace whose recorded policy is one of
``upstream_probabilistic_policies`` was kept by the hash of its trace id alone, with probability
``percentage / 100``; any other recorded policy (keep-errors, keep-slow, ...) keeps every such
trace, probability 1. Without a percentage there was no tier: probability 1. With a percentage
but no recorded policy (gate off, or a late span released from the decision cache) the keep
probability is unknown: it is taken as 1 and counted in the report as ``unknown_policy``. A
pick's inclusion probability is the upstream keep probability times the job's own share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

BASELINE_PCT = "rag.sampling.baseline_percentage"
POLICY = "tailsampling.policy"


def upstream_keep(attributes: Mapping[str, Any], probabilistic: Sequence[str]) -> tuple[float, str]:
    """``(keep probability, how it was decided)`` from the tail-sampling tier's attributes.

    ``how`` is ``none`` (no tier), ``probabilistic``, ``kept_by_policy``, ``unknown_policy`` or
    ``invalid_percentage``; see the module docstring for the rule.
    """
    raw = attributes.get(BASELINE_PCT)
    if raw is None:
        return 1.0, "none"
    try:
        pct = float(raw)
    except (TypeError, ValueError):
        return 1.0, "invalid_percentage"
    if not 0 < pct <= 100:
        return 1.0, "invalid_percentage"
    policy = attributes.get(POLICY)
    if not isinstance(policy, str) or not policy:
        return 1.0, "unknown_policy"
    if policy in probabilistic:
        return pct / 100.0, "probabilistic"
    return 1.0, "kept_by_policy"


__all__ = ["BASELINE_PCT", "POLICY", "upstream_keep"]
