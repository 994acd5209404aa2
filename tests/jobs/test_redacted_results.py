"""With PII scrubbing on, judge results never keep an answer's personal data (claims, evidence)."""

from __future__ import annotations

import json

from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.judging.judges import make_judges
from ragsieve.jobs.settings import load_settings

ANSWER = "Write to ana.lopez@example.com; refunds take 14 days."
CONTEXT = ("Refunds are paid within 14 days. Support answers at ana.lopez@example.com.",)


async def _results(**flags: object) -> list:
    settings = load_settings(None, dict(flags))
    it = make_interaction(query="How long do refunds take?", context=CONTEXT, answer=ANSWER)
    out = []
    for judge in make_judges(settings):
        out.extend(await judge.evaluate(it))
    return out


async def test_results_are_redacted_when_scrubbing_is_on() -> None:
    results = await _results()
    text = json.dumps([r.model_dump(mode="json") for r in results])
    assert "ana.lopez@example.com" not in text and "[EMAIL]" in text
    faith = next(r for r in results if r.evaluator == "faithfulness")
    assert any("[EMAIL]" in c["claim"] for c in faith.metadata["claims"])
    assert faith.judge_version.startswith("offline")  # versions (checkpoints) unchanged


async def test_identifiers_are_never_redacted() -> None:
    from ragsieve.evaluators.tools.redact import redact_value

    meta = {
        "chunks": [{"id": "xquad-00-03-en", "relevant": True}],
        "evidence_chunks": ["kb-2024-11-05"],
        "claims": [{"claim": "call 612 345 678", "chunk": "doc-12-34-56"}],
    }
    out = redact_value(meta)
    assert out["chunks"][0]["id"] == "xquad-00-03-en"
    assert out["evidence_chunks"] == ["kb-2024-11-05"]
    assert out["claims"][0] == {"claim": "call [PHONE]", "chunk": "doc-12-34-56"}


async def test_results_keep_the_text_when_scrubbing_is_off() -> None:
    results = await _results(**{"golden.scrub_pii": False})
    faith = next(r for r in results if r.evaluator == "faithfulness")
    assert any("ana.lopez@example.com" in c["claim"] for c in faith.metadata["claims"])


async def test_judges_label_with_the_jobs_thresholds() -> None:
    strict = await _results(**{"jobs.thresholds": {"faithfulness": 0.999}})
    faith = next(r for r in strict if r.evaluator == "faithfulness")
    default = next(r for r in await _results() if r.evaluator == "faithfulness")
    assert faith.judge_version != default.judge_version  # a new threshold is a new series
    assert (faith.label == "faithful") == (faith.score is not None and faith.score >= 0.999)
