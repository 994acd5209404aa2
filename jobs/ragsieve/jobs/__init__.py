"""Orchestration: the job's stages, golden growth, the demo and the CLI root.

One package per stage of a job pass, lower stages first: ``sampling`` (which traces) →
``results`` (the job's tables) → ``judging`` (the judge calls) → ``verdicts`` (pass or fail, and
why) → ``sinks`` (Phoenix annotations); ``run`` drives one pass and reports it, ``workers`` judges
on a procrastinate queue instead. ``golden`` grows the golden set from flagged cases; ``demo`` is
the self-contained demo. ``settings`` reads the configuration once; ``cli`` only assembles each
package's command group.
"""
