"""How far the judges can be trusted: their verdicts against people's labels.

Takes judge results and human labels (a calibration set, audits); gives numbers about the judges
themselves, not about the RAG app:

- ``calibration``: a judge against human labels: kappa, F1, pairwise accuracy, a threshold sweep;
- ``agreement``: predicted failures against people's labels, with bootstrap intervals;
- ``ppi``: prediction-powered inference of a failure rate, judge verdicts on every sampled trace
  corrected by people's labels on a subset, with its confidence interval.
"""
