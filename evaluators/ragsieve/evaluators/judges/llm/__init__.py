"""The LLM judges: a versioned prompt, an OpenAI-compatible call, a validated verdict.

Takes a :class:`~ragsieve.evaluators.records.RagInteraction` and an :class:`LLMConfig`
(``client``); gives ``EvalResult`` rows, or ``label="error"`` when the model gives no usable
verdict. Read in this order:

- ``client``: the chat client (retries, concurrency limit, usage and cost) and ``LLMConfig``;
- ``prompt``: the packaged prompts (``prompts/*.md``), filled once with redacted, defanged fields;
- ``base``: ``LLMJudge``, the cached flow: render, call n times, validate, score;
- ``judges``: the three metric judges and their verdict models;
- ``cache``: the SQLite verdict cache; ``families``: which models are one family (self-judging).
"""
