"""Judging: the judge calls of one pass, with bounded concurrency and a spend counter.

Takes the picked interactions and, for each, the judges without a current-version checkpoint;
gives judge results and checkpoints committed to the store, and a ``Spend`` (calls, tokens,
USD, errors, deferred traces).

Modules: ``judges`` (the judge set built from settings), ``spend`` (what a pass spent, against
its USD budget), ``judging`` (the loop: calls, group-committed writes, deferral once the budget,
the store or the caller says stop).
"""
