"""The CI regression gate: two eval results files in, a pass/fail report out.

Takes a baseline and a candidate ``ragsieve eval --json`` file and a policy (floors, the metrics
to check, confidence); gives a :class:`GateReport` whose ``passed`` decides the exit code, rendered
as a terminal table, PR-comment markdown or JSON. Read in this order:

- ``policy``: the policy TOML and the results files, with ``path:line: field`` errors;
- ``compare``: the decision (paired bootstrap per metric, floors, protected categories; an
  unpaired interval for holdout results);
- ``report``: the verdict as data; ``render``: the verdict for people;
- ``experiments``: the pipeline settings a run was made with and how two runs differ;
- ``log``: the experiment log (``ragsieve experiments``), each run against the one before it.

The golden set the results come from is in :mod:`ragsieve.evaluators.golden`, the metrics in
:mod:`ragsieve.evaluators.metrics`; the pytest fixture over all of this is
:mod:`ragsieve.evaluators.pytest_plugin`.
"""

from __future__ import annotations

from ragsieve.evaluators.gate.compare import compare, gate_files, paired_bootstrap
from ragsieve.evaluators.gate.policy import EvalResults, GatePolicy, load_policy, load_results
from ragsieve.evaluators.gate.render import render
from ragsieve.evaluators.gate.report import (
    DEFAULT_GATE_ROLE,
    CategoryCheck,
    GateReport,
    MetricCheck,
    Status,
)

__all__ = [
    "DEFAULT_GATE_ROLE",
    "CategoryCheck",
    "EvalResults",
    "GatePolicy",
    "GateReport",
    "MetricCheck",
    "Status",
    "compare",
    "gate_files",
    "load_policy",
    "load_results",
    "paired_bootstrap",
    "render",
]
