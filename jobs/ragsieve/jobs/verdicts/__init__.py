"""Verdicts: pass, fail or unjudged for each pick, with the root cause of a failure.

Takes a pick's interaction, its current-version judge results, the thresholds and what the
golden set expects; gives a ``Decision`` per pick, the ``FlaggedCase``s of fresh failures and
audited passes, and the ``samples`` rows that record the verdicts. Imports nothing from run,
workers or sinks.

Modules: ``flagging`` (failure policy: per-metric thresholds turn results into pass or fail),
``rootcause`` (which part failed, with the evidence), ``verdicts`` (decisions for a run's picks),
``flagged_case`` (``FlaggedCase``: a judged interaction with its evidence, what golden growth
and audits consume, and what a fresh decision emits).
"""
