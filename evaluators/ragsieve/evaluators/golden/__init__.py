"""The golden set and the runs scored against it: the inputs of an offline eval.

Takes JSONL files (a golden set, BEIR queries and qrels, a retriever's run); gives validated
:class:`~ragsieve.evaluators.records.GoldenCase` lists and runs, with ``path:line: field`` errors.

- ``sets``: load, write and version a golden set (``GoldenSet``, ``load_golden``, changelog);
- ``roles``: the split of a golden set into dev, regression and holdout cases, and who may look;
- ``runs``: a retriever's results per query, read from a file or produced by calling a function.

Scoring the runs is :mod:`ragsieve.evaluators.metrics`; comparing two scored runs is
:mod:`ragsieve.evaluators.gate`.
"""
