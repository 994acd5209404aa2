"""The model judges on tiny real models: faithfulness per claim and window, context relevance by
a reranker, the evidence in the explanation, and failures as ``label="error"``."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges.model import ModelConfig, ModelFolderError, model_judge
from ragsieve.evaluators.judges.model.context import ModelContextRelevanceJudge
from ragsieve.evaluators.judges.model.faithfulness import ModelFaithfulnessJudge
from ragsieve.evaluators.judges.model.runtime import LocalModel, load_model
from ragsieve.evaluators.judges.model.standin import nli_standin, reranker_standin, token_standin
from ragsieve.evaluators.testing import make_interaction

WORDS = ["the", "capital", "of", "france", "is", "city", "river", "flows", "north", "has", "a"]
FILLER = " ".join(f"word{i}" for i in range(120))


@pytest.fixture
def nli(tmp_path: Path) -> LocalModel:
    return load_model(nli_standin(tmp_path / "nli", ["paris"], ["berlin"], WORDS))


async def test_a_backed_answer_is_faithful_with_its_window_named(nli: LocalModel) -> None:
    judge = ModelFaithfulnessJudge(nli)
    it = make_interaction(
        context=("The river flows north.", "Paris is the capital of France."),
        answer="The capital of France is Paris.",
    )
    [r] = await judge.evaluate(it)
    assert r.label == "faithful" and r.score is not None and r.score >= judge.threshold
    [claim] = r.metadata["claims"]
    assert claim["supported"] and claim["probability"] == r.score
    assert r.judge_model == nli.label and nli.sha256[:12] in r.judge_version
    assert claim["chunk"] in r.explanation and "P(support)=" in r.explanation


async def test_a_contradicted_claim_makes_the_answer_unfaithful_and_says_which(
    nli: LocalModel,
) -> None:
    it = make_interaction(
        context=("Paris is the capital of France.",),
        answer="The river flows north. The capital of France is Berlin.",
    )
    [r] = await ModelFaithfulnessJudge(nli).evaluate(it)
    assert r.label == "unfaithful"
    ok, bad = r.metadata["claims"]
    assert ok["supported"] and not bad["supported"]
    assert bad["contradiction"] > 0.9 and r.score == bad["probability"]  # the weakest claim
    assert "claim 2 'The capital of France is Berlin.'" in r.explanation
    assert "P(contradiction)=" in r.explanation and "doc-0[0:" in r.explanation


async def test_evidence_past_the_models_length_is_found_in_a_later_window(
    nli: LocalModel,
) -> None:
    """A chunk twice the model's length, the backing word at its end: read whole (truncated) the
    model never sees it; cut into windows, the last window backs the claim."""
    chunk = FILLER + " the capital of france is paris"
    claim = "France has a capital city."
    [whole] = nli.score([(chunk, claim)])
    assert whole.support < 0.5
    [r] = await ModelFaithfulnessJudge(nli, windows_per_claim=1).evaluate(
        make_interaction(context=(chunk,), answer=claim)
    )
    assert r.label == "faithful" and r.metadata["windows"] > 1 and r.metadata["pairs"] == 1
    start, end = r.metadata["claims"][0]["window"]
    assert start > 0 and "paris" in chunk[start:end]


async def test_each_claim_is_checked_against_its_best_windows_only(nli: LocalModel) -> None:
    chunks = tuple(f"{FILLER} the river flows north {FILLER}" for _ in range(2))
    [r] = await ModelFaithfulnessJudge(nli, windows_per_claim=2).evaluate(
        make_interaction(context=chunks, answer="The river flows north.")
    )
    assert r.metadata["windows"] > 4 and r.metadata["pairs"] == 2
    assert r.label == "unfaithful"  # no window holds a backing word: neutral everywhere


async def test_a_token_model_names_the_hallucinated_words(tmp_path: Path) -> None:
    model = load_model(token_standin(tmp_path / "t", ["unicorn"], WORDS))
    [r] = await ModelFaithfulnessJudge(model).evaluate(
        make_interaction(
            context=("Paris is the capital of France.",),
            answer="The capital of France is Paris. The capital has a unicorn.",
        )
    )
    assert r.label == "unfaithful"
    ok, bad = r.metadata["claims"]
    assert ok["hallucinated"] == [] and [h["text"] for h in bad["hallucinated"]] == ["unicorn"]
    assert "marked: 'unicorn'" in r.explanation


async def test_abstentions_and_missing_inputs_are_not_judged(nli: LocalModel) -> None:
    judge = ModelFaithfulnessJudge(nli)
    [a] = await judge.evaluate(make_interaction(answer="I don't know."))
    [b] = await judge.evaluate(make_interaction(context=(), answer="Paris is the capital."))
    [c] = await judge.evaluate(make_interaction(answer=""))
    assert (a.label, b.label, c.label) == ("abstained", "skipped", "skipped")
    assert nli.stats.pairs == 0


async def test_a_trace_over_its_time_limit_is_an_error_not_a_crash(nli: LocalModel) -> None:
    answer = "The river flows north. The capital flows south. A city has a river."
    judge = ModelFaithfulnessJudge(nli, batch_size=1, time_limit_s=1e-9)
    [r] = await judge.evaluate(make_interaction(answer=answer))
    assert r.label == "error" and r.score is None
    assert "time limit reached after 1 of" in r.explanation and "per trace" in r.explanation


async def test_a_score_just_above_the_threshold_is_uncertain(nli: LocalModel) -> None:
    it = make_interaction(answer="The capital of France is Paris.")
    [r] = await ModelFaithfulnessJudge(nli, threshold=0.5, pass_at=0.999).evaluate(it)
    assert r.score is not None and 0.5 <= r.score < 0.999 and r.label == "uncertain"


async def test_the_reranker_scores_each_chunk_and_the_best_decides(tmp_path: Path) -> None:
    model = load_model(reranker_standin(tmp_path / "r", ["paris"], WORDS))
    judge = ModelContextRelevanceJudge(model)
    hit = make_interaction(context=("The river flows north.", "Paris is the capital of France."))
    [r] = await judge.evaluate(hit)
    assert r.label == "relevant"
    noise, best = r.metadata["chunks"]
    assert (noise["id"], noise["relevant"], best["id"], best["relevant"]) == (
        "doc-0",
        False,
        "doc-1",
        True,
    )
    assert r.score == best["score"] and "best doc-1[0:" in r.explanation
    [miss] = await judge.evaluate(make_interaction(context=("The river flows north.",)))
    assert miss.label == "irrelevant" and miss.score is not None and miss.score < judge.threshold


async def test_the_reranker_reads_a_long_chunk_by_windows(tmp_path: Path) -> None:
    model = load_model(reranker_standin(tmp_path / "r", ["paris"], WORDS))
    [r] = await ModelContextRelevanceJudge(model).evaluate(
        make_interaction(context=(FILLER + " paris is the capital",))
    )
    assert r.label == "relevant" and r.metadata["windows"] > 1
    assert r.metadata["chunks"][0]["window"][0] > 0


def test_a_model_of_the_wrong_task_is_refused_for_a_metric(tmp_path: Path) -> None:
    rr = load_model(reranker_standin(tmp_path / "r", ["paris"]))
    nli = load_model(nli_standin(tmp_path / "n", ["paris"]))
    with pytest.raises(ModelFolderError, match="cannot judge faithfulness"):
        ModelFaithfulnessJudge(rr)
    with pytest.raises(ModelFolderError, match="needs a relevance model"):
        ModelContextRelevanceJudge(nli)
    with pytest.raises(ConfigError, match="model.context_relevance: no model folder set"):
        model_judge("context_relevance", ModelConfig(faithfulness=str(tmp_path / "n")))
    with pytest.raises(ConfigError, match="model.answer_relevance: no model folder"):
        model_judge("answer_relevance", ModelConfig(faithfulness=str(tmp_path / "n")))
