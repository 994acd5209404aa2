"""Orchestration: the job's stages, golden growth, the demo and the CLI root.

One package per stage, in the order a job run meets them (each imports only the ones before it;
``tests/test_layering.py`` keeps the order):

1. ``settings/``: the configuration, read once at the edge; at the bottom, it imports no stage.
2. ``sampling/``: which traces of the window are judged, with their inclusion probabilities.
3. ``results/``: the job's tables in the store (candidates in, checkpoints and results out).
4. ``judging/``: the judge calls of a pass, bounded and counted against the budget.
5. ``verdicts/``: pass or fail for each pick, and the root cause of a failure.
6. ``fitting/``: people's labels → a calibration the judges are built with (``ragsieve judges``).
7. ``sinks/``: verdicts beyond the store (Phoenix span annotations through the outbox).
8. ``golden/``: flagged cases → candidates (``growth/``) → people (``review/``) → the next
   golden version.
9. ``workers/``: judging on a procrastinate queue instead of in a pass (scale-out mode).
10. ``history/``: every run's stored report, read back as a series.
11. ``alerts/``: rules over the run history, delivered to webhooks through the outbox.
12. ``report/``: the run history as one HTML file.
13. ``run/``: one pass end to end (plan, then execute) and its report; ``ragsieve up``.
14. ``demo/``: the Tallyfox app with planted failures (``tallyfox/``) and the whole loop over it.

The top level is the edge: ``cli`` (the ``ragsieve`` command; it only assembles each package's
command group), ``config_cli`` (``ragsieve config``) and ``api`` (``Client``: the store as
DataFrames, for notebooks).
"""
