"""Fitting the judges to a deployment: people's labels, the fit, ``ragsieve judges``.

Modules: ``labels`` (labels from reviews, audits, Phoenix and files), ``evidence`` (the
labelled examples: each trace's offline evidence and verdict table), ``fit`` (per metric the
threshold and evidence weights, cross-validated), ``cli`` (``judges list|calibrate|labels|fit``).
Calibrations are stored by ``ragsieve.jobs.judging.calibrations``, where the judges are built.
"""
