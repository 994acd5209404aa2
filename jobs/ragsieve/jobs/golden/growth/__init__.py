"""Golden growth: a run's flagged failures → deduplicated, categorised golden-set candidates.

Takes: flagged cases (``verdicts.flagged_case``), the ``[golden]`` settings, the store's
``candidates`` table and the newest golden file. Gives: ``candidates`` rows (new ones, or a count
on the case they repeat) and the failure categories with their history.

Modules, lower first: ``repo`` (SQL over ``candidates``), ``topics`` (clustering into topic
areas), ``signature`` (what makes two failures one case), ``reference`` (the golden set as dedup
and novelty see it), ``categories`` and ``category_log`` (failure categories and their memory
across runs), ``matching`` (a run's failures against candidates and golden, no store) and
``candidates`` (:func:`grow`, what the job calls).
"""
