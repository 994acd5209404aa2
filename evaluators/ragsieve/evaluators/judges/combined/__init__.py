"""Judges built from other judges.

Takes the offline and LLM judges; gives judges with the same protocol:

- ``cascade``: the offline judge first, the LLM judge only where the offline one is unsure;
- ``tiers``: any chain of judges (heuristics, local model, LLM), each asked only where the one
  before is unsure, recording which tier decided and what each cost;
- ``calibrated``: an offline or LLM judge deciding at thresholds (and evidence weights) fitted
  on labelled data (``ragsieve judges fit``).
"""
