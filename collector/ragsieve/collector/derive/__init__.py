"""Derive: where spans become interactions.

Takes the stored spans, GenAI log events and feedback of traces that have gone quiet; gives one
normalized ``RagInteraction`` per trace (question, prompt, retrieved chunks, answer, model,
tokens, outcome, session), saved back to the store, and re-derived when late data arrives.
Imports ``wire`` and ``store`` only: never ``receive`` or ``forward``.

Read it in this order: ``settle`` (which traces are due; loads their spans and saves the
records), ``normalize`` (``derive(spans, log_events, feedback) -> RagInteraction``: the one
function where a trace becomes an interaction), ``assemble`` (the derivation steps for one trace:
pipeline, generation, context, content, outcome). ``sessions`` puts stored interactions in turn
order per conversation. Below them: ``trace/`` (reading spans: roles, tree, scope, attribute and
message readers) and ``fields/`` (the record's fields, one concern per module).
"""
