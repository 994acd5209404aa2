"""Workers: judge settled traces on a procrastinate queue, once per judge version, on one budget.

Takes settled traces from the store and the judge set from settings; gives
checkpoints and results in the store, the same rows a job pass writes, from any number of
worker processes. Imports no other stage.

Scale-out mode only (a ``postgresql://`` store); the embedded single-process mode keeps
``ragsieve up`` and needs no queue. The scheduler (``ragsieve workers schedule``) finds settled
interactions that lack a checkpoint for some judge and enqueues them in batches (one queueing lock
per batch); any worker (``ragsieve workers worker``) runs a batch. Per trace, a worker takes a
non-blocking session-level advisory lock, re-reads the checkpoints, reserves budget, judges with
no transaction open, then commits results and checkpoints in one short transaction and unlocks.
A worker killed mid-trace drops its lock with its connection and its job is retried elsewhere
once its heartbeat is stale: the trace may be judged (and its budget reserved) twice, but its
results are written at most once per judge version.
The budget (calls and USD per window) is one row per window in ``budgets``, reserved with an
atomic ``UPDATE ... WHERE spent + n <= limit RETURNING``, so it is global, not per process.

Modules: ``queue`` (queue schema, the procrastinate app and its tasks), ``schedule``
(the scheduler's pass), ``batch`` (judging one batch), ``budget`` (the global budget),
``judges`` (judge sets per process) and ``cli`` (``ragsieve workers worker|schedule``).
"""
