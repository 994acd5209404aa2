"""Run history: every run's stored report, read back as a series, and the weighted breakdowns.

Takes: the store's ``runs`` table (each run's report JSON). Gives: :class:`RunRecord` series
(``history.runs``), per-domain weighted failure rates (``history.breakdown``) and
``ragsieve runs list``.
"""
