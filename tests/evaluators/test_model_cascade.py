"""Heuristics → local model → LLM: which tier decides, what each cost, and how the registry,
the settings, a calibration and the CLI reach the tier. The LLM is the real openai client against
a loopback OpenAI-compatible server; the model a tiny real ONNX graph."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges import LLMConfig, build_judges, get_judge
from ragsieve.evaluators.judges.combined.calibrated import (
    CalibratedJudge,
    Calibration,
    MetricCalibration,
)
from ragsieve.evaluators.judges.combined.tiers import Tier, TieredJudge
from ragsieve.evaluators.judges.model import ModelConfig, model_judge, tiered
from ragsieve.evaluators.judges.model.standin import nli_standin, reranker_standin
from ragsieve.evaluators.judges.offline.context import ContextRelevanceJudge
from ragsieve.evaluators.judges.offline.faithfulness import FaithfulnessJudge
from ragsieve.evaluators.judges.offline.relevance import AnswerRelevanceJudge
from ragsieve.evaluators.testing import Fault, make_interaction

WORDS = ["the", "capital", "of", "france", "is", "city", "river", "flows", "north"]
LLM_YES = {
    "reasoning": "stated",
    "abstained": False,
    "claims": [{"claim": "x", "supported": True, "evidence": "x", "reason": "stated"}],
}
BACKED = make_interaction(answer="The capital of France is Paris.")
NEUTRAL = make_interaction(
    context=("The river flows north of the city.",), answer="The river flows north of the city."
)


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, str]:
    return {
        "faithfulness": str(nli_standin(tmp_path / "nli", ["paris"], ["berlin"], WORDS)),
        "context_relevance": str(reranker_standin(tmp_path / "rr", ["paris"], WORDS)),
    }


def llm(server, **kw) -> LLMConfig:
    base = dict(base_url=server.base_url, model="judge-1", max_retries=1, backoff_s=0.01)
    base.update(price_per_1k_prompt=1.0, price_per_1k_completion=2.0, timeout_s=2.0)
    return LLMConfig(**{**base, **kw})


async def test_everything_to_the_model_it_decides_what_it_is_sure_of(
    folders: dict[str, str], server
) -> None:
    cfg = ModelConfig(**folders, escalate="all", uncertainty_band=(0.3, 0.6))
    judge = tiered(
        "faithfulness", cfg, FaithfulnessJudge(), get_judge("llm_faithfulness", llm=llm(server))
    )
    [r] = await judge.evaluate(BACKED)
    assert r.metadata["tier"] == "model" and r.label == "faithful"
    assert [t["tier"] for t in r.metadata["tiers"]] == ["offline", "model"]
    assert all(t["latency_ms"] >= 0 for t in r.metadata["tiers"])
    assert r.cost_usd == 0.0 and server.requests == []
    assert r.judge_model is not None and "sha256:" in r.judge_model
    assert judge.stats.decided == {"model": 1}


async def test_what_the_model_leaves_uncertain_goes_to_the_llm_with_its_cost(
    folders: dict[str, str], server
) -> None:
    server.enqueue(LLM_YES)
    cfg = ModelConfig(**folders, escalate="all", uncertainty_band=(0.05, 0.3))
    judge = tiered(
        "faithfulness", cfg, FaithfulnessJudge(), get_judge("llm_faithfulness", llm=llm(server))
    )
    [r] = await judge.evaluate(NEUTRAL)  # the stand-in reads no backing word: P(support) ~0.1
    assert r.metadata["tier"] == "llm" and r.label == "faithful" and len(server.requests) == 1
    offline, model, top = r.metadata["tiers"]
    assert 0.05 <= model["score"] <= 0.3 and top["cost_usd"] > 0
    assert r.cost_usd == pytest.approx(top["cost_usd"]) and r.prompt_tokens > 0
    assert r.metadata["offline_label"] == offline["label"]


async def test_a_failing_llm_keeps_the_models_verdict_and_says_why(
    folders: dict[str, str], server
) -> None:
    server.enqueue(Fault(status=500), Fault(status=500))
    cfg = ModelConfig(**folders, escalate="all", uncertainty_band=(0.05, 0.3))
    judge = tiered(
        "faithfulness", cfg, FaithfulnessJudge(), get_judge("llm_faithfulness", llm=llm(server))
    )
    [r] = await judge.evaluate(NEUTRAL)
    assert r.metadata["tier"] == "model" and r.label == "unfaithful"
    assert "escalation_error" in r.metadata and len(r.metadata["tiers"]) == 3


async def test_a_model_over_its_time_limit_passes_the_trace_to_the_llm(
    folders: dict[str, str], server
) -> None:
    server.enqueue(LLM_YES)
    cfg = ModelConfig(**folders, escalate="all", batch_size=1, time_limit_s=1e-9)
    judge = tiered(
        "faithfulness", cfg, FaithfulnessJudge(), get_judge("llm_faithfulness", llm=llm(server))
    )
    it = make_interaction(answer="The river flows north. The capital is a city. A city is north.")
    [r] = await judge.evaluate(it)
    assert [t["label"] for t in r.metadata["tiers"]][1] == "error"
    assert r.metadata["tier"] == "llm"


async def test_confident_heuristics_never_reach_the_model(folders: dict[str, str]) -> None:
    heuristic = FaithfulnessJudge()
    [first] = await heuristic.evaluate(BACKED)
    assert first.score is not None and first.label != "uncertain"
    away = (0.0, first.score / 2) if first.score > 0.1 else (0.5, 1.0)
    judge = tiered("faithfulness", ModelConfig(**folders, band=away), heuristic)
    model = judge.tiers[1].judge.model
    before = model.stats.pairs
    [r] = await judge.evaluate(BACKED)
    assert r.metadata["tier"] == "offline" and r.label == first.label
    assert model.stats.pairs == before and not r.metadata["escalated"]
    inside = (first.score - 0.01, first.score + 0.01)
    [again] = await tiered("faithfulness", ModelConfig(**folders, band=inside), heuristic).evaluate(
        BACKED
    )
    assert again.metadata["tier"] == "model" and model.stats.pairs > before


async def test_skipped_results_stop_at_the_first_tier(folders: dict[str, str]) -> None:
    judge = tiered("faithfulness", ModelConfig(**folders, escalate="all"), FaithfulnessJudge())
    [r] = await judge.evaluate(make_interaction(answer=""))
    assert r.label == "skipped" and r.metadata["tier"] == "offline"


async def test_the_model_backend_builds_tiers_for_two_metrics_and_keeps_answer_relevance(
    folders: dict[str, str],
) -> None:
    cfg = ModelConfig(**folders, escalate="all")
    faith, answer, ctx = build_judges(
        ["faithfulness", "answer_relevance", "context_relevance"],
        backend="model",
        model=cfg,
        thresholds={"faithfulness": 0.7, "context_relevance": 0.55},
    )
    assert isinstance(faith, TieredJudge) and isinstance(ctx, TieredJudge)
    assert isinstance(answer, AnswerRelevanceJudge)
    assert faith.tiers[1].judge.threshold == 0.7 and faith.tiers[0].judge.threshold == 0.7
    assert ctx.tiers[1].judge.threshold == 0.55
    [r] = await ctx.evaluate(BACKED)
    assert r.metadata["tier"] == "model" and r.label == "relevant"
    with pytest.raises(ConfigError, match=r"the model backend needs a model folder"):
        build_judges(["faithfulness"], backend="model")
    # a metric without a folder keeps its offline judge
    [alone] = build_judges(
        ["context_relevance"],
        backend="model",
        model=ModelConfig(**{"faithfulness": folders["faithfulness"]}),
    )
    assert isinstance(alone, ContextRelevanceJudge)


def test_a_cascade_with_a_model_has_three_tiers(folders: dict[str, str], server) -> None:
    [j] = build_judges(
        ["faithfulness"], backend="cascade", llm=llm(server), model=ModelConfig(**folders)
    )
    assert isinstance(j, TieredJudge) and [t.name for t in j.tiers] == ["offline", "model", "llm"]
    [plain] = build_judges(["faithfulness"], backend="cascade", llm=llm(server))
    assert not isinstance(plain, TieredJudge)  # no model configured: the two-tier cascade


async def test_a_fit_for_the_model_backend_relabels_at_its_threshold(
    folders: dict[str, str],
) -> None:
    cal = Calibration.from_json(
        {"metrics": {"faithfulness": {"threshold": 0.05}}, "backend": "model"}, "fit.json"
    )
    assert cal.backend == "model"
    [j] = build_judges(
        ["faithfulness"],
        backend="model",
        model=ModelConfig(**folders, escalate="all"),
        calibration=cal,
    )
    assert isinstance(j, CalibratedJudge) and cal.id in j.version
    [r] = await j.evaluate(NEUTRAL)  # raw ~0.1: unfaithful at 0.65, faithful at a 0.05 fit
    assert r.metadata["raw_score"] < 0.65 and r.label == "faithful"
    assert r.score is not None and r.score >= 0.65  # on the job's scale: the job passes it too
    [other] = build_judges(["faithfulness"], backend="model", model=ModelConfig(**folders))
    assert not isinstance(other, CalibratedJudge) or cal.id not in other.version
    _ = MetricCalibration  # the fitted numbers' type, as judges fit stores them


def test_tiers_need_one_and_name_their_bands() -> None:
    with pytest.raises(ValueError, match="at least one tier"):
        TieredJudge([])
    j = TieredJudge(
        [Tier("offline", FaithfulnessJudge(), (0.3, 0.6)), Tier("x", FaithfulnessJudge())]
    )
    assert j.version.endswith("|0.3-0.6") and j.name == "faithfulness"


async def test_settings_reach_the_model_tier_without_an_llm(
    folders: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragsieve.jobs.judging.judges import make_judges
    from ragsieve.jobs.settings import load_settings

    monkeypatch.setenv("RAGSIEVE_JOBS__BACKEND", "model")
    monkeypatch.setenv("RAGSIEVE_MODEL__FAITHFULNESS", folders["faithfulness"])
    monkeypatch.setenv("RAGSIEVE_MODEL__THREADS", "1")
    monkeypatch.setenv("RAGSIEVE_MODEL__ESCALATE", "all")
    settings = load_settings()
    faith, _ = make_judges(settings, ["faithfulness", "answer_relevance"], calibration=False)
    tiers = faith.inner  # results are redacted before they are stored (golden.scrub_pii)
    assert isinstance(tiers, TieredJudge)
    model = tiers.tiers[1].judge
    assert model.model.session.get_session_options().intra_op_num_threads == 1
    [r] = await faith.evaluate(BACKED)
    assert r.label == "faithful" and r.metadata["tier"] == "model"
    assert r.judge_model == model.model.label


def test_the_cli_exits_2_naming_a_folder_that_is_not_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragsieve.collector.store import open_store
    from ragsieve.jobs.cli import main

    store = f"sqlite:///{tmp_path / 'x.db'}"
    open_store(store, create=True).close()
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("RAGSIEVE_JOBS__BACKEND", "model")
    monkeypatch.setenv("RAGSIEVE_MODEL__FAITHFULNESS", str(tmp_path / "empty"))
    with pytest.raises(SystemExit) as info:
        main(["jobs", "run", "--store", store, "--dry-run"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'empty'}: no ragsieve-model.json saying the model's task" in err


def test_model_judge_labels_at_the_given_threshold(folders: dict[str, str]) -> None:
    j = model_judge("faithfulness", ModelConfig(**folders), threshold=0.42)
    assert j.threshold == 0.42 and ":t0.42:" in j.version


def test_a_band_out_of_order_is_refused_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragsieve.jobs.settings import load_settings

    monkeypatch.setenv("RAGSIEVE_MODEL__UNCERTAINTY_BAND", "[0.9, 0.2]")
    with pytest.raises(
        ConfigError, match=r"^RAGSIEVE_MODEL__UNCERTAINTY_BAND: a band is \[lo, hi\]"
    ):
        load_settings()
