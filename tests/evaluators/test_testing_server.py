"""The loopback OpenAI-compatible fake: real HTTP, scripted replies and faults."""

from __future__ import annotations

import httpx

from ragsieve.evaluators.testing import FakeOpenAIServer, Fault, make_interaction


def test_scripted_replies_faults_and_default():
    with FakeOpenAIServer(default=lambda body: {"echo": body["model"]}) as s:
        s.enqueue({"a": 1}, Fault(status=429), Fault(malformed=True))
        url = s.base_url + "/chat/completions"
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        r1 = httpx.post(url, json=body)
        assert r1.json()["choices"][0]["message"]["content"] == '{"a": 1}'
        assert httpx.post(url, json=body).status_code == 429
        bad = httpx.post(url, json=body).json()["choices"][0]["message"]["content"]
        assert not bad.startswith("{") or "not json" in bad
        assert (
            httpx.post(url, json=body).json()["choices"][0]["message"]["content"] == '{"echo": "m"}'
        )
        assert len(s.requests) == 4 and s.base_url.startswith("http://127.0.0.1:")


def test_make_interaction_builds_in_prompt_chunks():
    x = make_interaction(query="q?", context=("a", "b"), answer="ans")
    assert [d.id for d in x.context] == ["doc-0", "doc-1"] and x.answer == "ans"
