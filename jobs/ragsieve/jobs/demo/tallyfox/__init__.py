"""Tallyfox, the demo RAG app: a bilingual help-centre assistant with planted failures.

Takes: a seed, a share of failures and (optionally) an OpenAI-compatible endpoint. Gives: query
traffic, answers with OpenInference spans sent to the collector, and the log of what it planted.

Modules: ``kb`` (the knowledge base, ``kb.md``), ``retrieval`` (BM25 + embeddings, reranked),
``generate`` (extractive or LLM answers), ``failures`` (what each planted failure does),
``traffic`` (sessions of questions) and ``app`` (:class:`DemoApp`, which answers them).
"""
