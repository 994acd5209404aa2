"""Run: one pass of the job, end to end, and its report.

Takes the settings and the store; settles traces, then drives sampling → judging → verdicts →
results → sinks (and golden growth); gives a ``RunOutcome``: the flagged and audit cases and the
report (counts, cost, the weighted failure rate and its interval, the judge's measured quality),
with exit code 1 when the judge error rate is over budget.

Modules: ``run`` (``run_once``: the orchestration), ``report`` (the report's fields and its
table), ``estimate`` (the statistics: weighted failure rate, Wilson intervals, judge quality),
``cli`` (``ragsieve jobs run``), ``up`` (``ragsieve up``: the collector plus the scheduled pass).
"""
