"""Sampling: which traces of a window the judges see, and with what inclusion probability.

Takes the window's candidates (their sampling features, read by ``results``), the golden queries
and the call budget; gives a ``Selection``: ``Pick``s, each with its stratum and inclusion
probability (the job's own share times the upstream tier's keep probability), and per-stratum
coverage. Imports no other stage.

Modules: ``strata`` (the one stratum each interaction falls in), ``upstream`` (the tail-sampling
tier's keep probability), ``golden_index`` (golden queries as vectors, for novelty and flag
categories), ``sampling`` (the stratified sampler: quotas, call budget, recovery).
"""
