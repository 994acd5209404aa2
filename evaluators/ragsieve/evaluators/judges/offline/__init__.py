"""The offline judges: heuristic, no model call, deterministic, the same verdict every run.

Takes a :class:`~ragsieve.evaluators.records.RagInteraction`; gives ``EvalResult`` rows for
``faithfulness``, ``answer_relevance`` and ``context_relevance``.

Where a claim is checked: ``faithfulness`` reads the answer (``text.reading``), splits it into
claims (``claims``), and asks ``support`` how well the retrieved chunks back each claim; the
fitted ``support_model`` (its weights in ``faithfulness_model.json`` beside it) turns the
evidence into one score, and ``binding`` reads the whole answer once each claim has its support
(a value given for another entity, broken names, short denials, comparisons, choices).
``relevance`` and ``context`` judge the answer against the question and the chunks against the
question; ``conversation`` says which question a chat turn really asks. ``base`` holds what all
three judges share. The word-level helpers (tokens, terms, spans, question types, choices,
comparisons, an answer's structure) are in ``text/``.
"""
