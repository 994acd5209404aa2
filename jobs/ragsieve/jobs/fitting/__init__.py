"""Fitting the judges to a deployment: people's labels, the fit, ``ragsieve judges``.

Takes: people's labels (reviews, audits, Phoenix, files) and the stored results of the labelled
traces. Gives: a calibration per metric (threshold and evidence weights, cross-validated), stored
by ``ragsieve.jobs.judging.calibrations``, where the judges are built.

Modules, lower first: ``table`` (each labelled trace's verdict under every pass/fail combination),
``scores`` (each metric's raw score under candidate weights), ``guards`` (the unlabelled traces'
cost and the sign test that keep a fit to what its labels speak for), ``fit`` (coordinate
ascent, folds, the before/after agreement), ``labels`` (labels from reviews, audits, Phoenix and
files), ``evidence`` (the labelled examples and the unlabelled anchors read from the store) and
``cli`` (``judges list|calibrate|labels|fit``).
"""
