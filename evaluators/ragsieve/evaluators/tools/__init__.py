"""Tools the rooms above share: small helpers that know nothing of judges or the gate.

Takes text, files and settings; gives what several rooms need: ``redact`` (PII masked before text
leaves the machine), ``embeddings`` (the embedded multilingual sentence encoder, with a vector
cache), ``jsonlines`` (one line of a user's JSONL file, refusals naming ``path:line``), ``files``
(temporary files for atomic writes), ``limits`` (how much text a record keeps per field),
``lookalike`` (text in matching form: invisible characters removed, look-alike letters folded),
``userfile`` (a file a user names: regular, read within a bound; TOML with ``path:line``
errors) and ``extras`` (how to install a missing optional extra). They import
nothing from ragsieve but :mod:`ragsieve.evaluators.errors`.
"""
