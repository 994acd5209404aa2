"""Results: the job's tables in the store and the reads over them.

Takes the store (migration ``005_jobs``: ``checkpoints``, ``results``, ``samples``, ``runs``);
gives window candidates to sampling, checkpoint and result writes to judging, stored results and
sample rows to verdicts, runs and reviewed labels to the run report, and ``ragsieve results
list|export`` to people.

Modules: ``resultstore`` (window candidates; the front door that re-exports the rest),
``judgements`` (checkpoints and results), ``samples`` (verdict rows and runs), ``reviews``
(listing, reviewed labels, open audits), ``cli`` (``ragsieve results``).
"""
