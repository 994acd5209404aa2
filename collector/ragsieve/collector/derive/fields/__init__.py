"""The interaction's fields, each read off a classified trace by one module.

Takes a ``TraceTree`` (from ``derive.trace``) and its log events; gives the parts ``assemble``
puts into a ``RagInteraction``: question, prompt, answer, model, tokens and cost (``extract``),
session, user, tags and metadata (``identity``), convention, flat attributes, timing and finish
(``record``), retrieved chunks per stage and the prompt containment check (``chunks``), errors,
cancellation and user feedback (``outcome``, SPAN_SPEC §3.4.10 and §6). Pure: no store, no I/O.
"""
