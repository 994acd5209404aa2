"""The model tier's runtime on tiny real models: real onnxruntime sessions over ONNX graphs built
with onnx.helper, real `tokenizers` WordLevel tokenizers, written to folders by the test."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges.model import ModelFolderError, read_manifest
from ragsieve.evaluators.judges.model.runtime import LocalModel, ModelTimeLimit, load_model
from ragsieve.evaluators.judges.model.standin import (
    nli_standin,
    reranker_standin,
    token_standin,
    write_standin,
)
from ragsieve.evaluators.judges.model.windows import best_windows, budget, cut

WORDS = ["the", "capital", "of", "france", "is", "city", "a", "river", "flows"]


@pytest.fixture
def nli(tmp_path: Path) -> Path:
    return nli_standin(tmp_path / "nli", ["paris"], ["berlin"], WORDS)


def test_pair_model_reads_entailment_neutral_and_contradiction(nli: Path) -> None:
    model = LocalModel(read_manifest(nli))
    entail, neutral, contra = model.score(
        [
            ("paris is the capital", "the capital of france"),
            ("the river flows", "the capital of france"),
            ("berlin is the capital", "the capital of france"),
        ]
    )
    assert entail.support > 0.9 and entail.contradict is not None and entail.contradict < 0.05
    assert neutral.support < 0.2 and neutral.contradict is not None and neutral.contradict < 0.2
    assert contra.support < 0.01 and contra.contradict is not None and contra.contradict > 0.99


def test_label_mapping_follows_the_manifest_not_the_output_order(tmp_path: Path) -> None:
    """The same words with the outputs in another order: the manifest's labels say which column
    is entailment, so the verdicts do not move."""
    a = LocalModel(read_manifest(nli_standin(tmp_path / "a", ["paris"], ["berlin"], WORDS)))
    order = ("contradiction", "entailment", "neutral")
    b_dir = nli_standin(tmp_path / "b", ["paris"], ["berlin"], WORDS, labels=order)
    b = LocalModel(read_manifest(b_dir))
    pairs = [("paris is a city", "france"), ("berlin", "france"), ("a river", "france")]
    for x, y in zip(a.score(pairs), b.score(pairs), strict=True):
        assert x.support == pytest.approx(y.support) and x.contradict == pytest.approx(y.contradict)
    # naming the wrong label as support flips what the model backs
    flipped = LocalModel(read_manifest(b_dir, {"support": ["contradiction"], "contradict": []}))
    [s] = flipped.score([("berlin", "france")])
    assert s.support > 0.99 and s.contradict is None


def test_labels_come_from_config_json_id2label_when_the_manifest_has_none(
    tmp_path: Path,
) -> None:
    folder = nli_standin(tmp_path / "m", ["paris"], [], WORDS, labels=("neutral", "entailment"))
    manifest = json.loads((folder / "ragsieve-model.json").read_text())
    del manifest["labels"]
    (folder / "ragsieve-model.json").write_text(json.dumps(manifest))
    (folder / "config.json").write_text(json.dumps({"id2label": {"1": "ENTAILMENT", "0": "x"}}))
    m = read_manifest(folder)
    assert m.labels == ("x", "entailment") and m.index(m.support) == [1]


def test_token_model_marks_only_the_hypothesis_words(tmp_path: Path) -> None:
    model = LocalModel(read_manifest(token_standin(tmp_path / "t", ["unicorn"], WORDS)))
    clean, marked = model.score(
        [("a unicorn is the capital", "the capital of france"), ("the city", "a unicorn city")]
    )
    assert clean.support > 0.9 and clean.spans == ()  # the premise's unicorn is not the claim's
    assert marked.support < 0.1
    [(start, end, p)] = marked.spans
    assert "a unicorn city"[start:end] == "unicorn" and p > 0.9


def test_reranker_reads_one_logit_as_a_sigmoid(tmp_path: Path) -> None:
    model = LocalModel(read_manifest(reranker_standin(tmp_path / "r", ["paris"], WORDS)))
    hit, miss = model.score([("capital of france", "paris is a city"), ("capital", "a river")])
    assert hit.support == pytest.approx(1 / (1 + math.exp(-4)), abs=1e-6)
    assert miss.support == pytest.approx(1 / (1 + math.exp(4)), abs=1e-6)


def test_batches_give_the_same_verdicts_in_fewer_runs(nli: Path) -> None:
    pairs = [(f"{w} is the capital", "france") for w in ["paris", "berlin", "a", "city"] * 5]
    one = LocalModel(read_manifest(nli))
    seven = LocalModel(read_manifest(nli))
    alone, batched = one.score(pairs, batch_size=1), seven.score(pairs, batch_size=7)
    assert [s.support for s in alone] == pytest.approx([s.support for s in batched])
    assert (one.stats.runs, seven.stats.runs) == (20, math.ceil(20 / 7))
    assert one.stats.pairs == seven.stats.pairs == 20


def test_threads_are_capped_and_the_model_is_named_by_its_hash(nli: Path) -> None:
    model = load_model(nli, threads=1)
    assert model.session.get_session_options().intra_op_num_threads == 1
    assert load_model(nli, threads=1) is model  # loaded once per process
    import hashlib

    digest = hashlib.sha256((nli / "model.onnx").read_bytes()).hexdigest()
    assert model.label == f"standin-nli (onnx sha256:{digest[:12]})"
    with pytest.raises(ConfigError, match="model.threads"):
        LocalModel(read_manifest(nli), threads=0)


def test_a_time_limit_stops_between_batches(nli: Path) -> None:
    model = LocalModel(read_manifest(nli))
    pairs = [("paris", "france")] * 4
    with pytest.raises(ModelTimeLimit, match="after 1 of 4 pairs"):
        model.score(pairs, batch_size=1, time_limit_s=1e-9)
    assert len(model.score(pairs, batch_size=4, time_limit_s=1e-9)) == 4  # one batch always runs


def test_windows_cover_a_long_text_with_overlap(nli: Path) -> None:
    model = LocalModel(read_manifest(nli))  # max_length 64
    words = [f"w{i}" for i in range(150)]
    text = " ".join(words)
    size = budget(model, ["the capital of france"])
    assert size == 64 - 3 - 4
    windows = cut(model, "doc-0", text, size)
    assert len(windows) > 1
    seen = [w.text.split() for w in windows]
    assert all(len(s) <= size for s in seen)
    assert [w for s in seen for w in s if w not in seen[0]][-1] == "w149"  # the end is read
    assert set(words) == {w for s in seen for w in s}
    for a, b in zip(seen, seen[1:], strict=False):  # neighbours share the stride
        assert len(set(a) & set(b)) == model.manifest.stride
    assert cut(model, "doc-1", "the capital", size)[0].where == "doc-1[0:11]"


def test_best_windows_are_the_ones_sharing_the_claims_words(nli: Path) -> None:
    model = LocalModel(read_manifest(nli))
    text = " ".join(["filler"] * 100 + ["river", "flows", "north"] + ["filler"] * 100)
    windows = cut(model, "doc-0", text, 20)
    [best] = best_windows("the river flows north", windows, 1)
    assert "river flows" in best.text


def _folder(tmp_path: Path) -> Path:
    return nli_standin(tmp_path / "ok", ["paris"], [], WORDS)


@pytest.mark.parametrize(
    ("breaks", "says"),
    [
        (lambda f: (f / "model.onnx").unlink(), "model.onnx: missing"),
        (lambda f: (f / "tokenizer.json").unlink(), "tokenizer.json: missing"),
        (lambda f: (f / "ragsieve-model.json").unlink(), "no ragsieve-model.json saying"),
        (lambda f: (f / "ragsieve-model.json").write_text("{"), "ragsieve-model.json: not JSON"),
        (
            lambda f: (f / "ragsieve-model.json").write_text('{"task": "nli"}'),
            "task: must be pair, token or relevance",
        ),
        (
            lambda f: (f / "ragsieve-model.json").write_text('{"task": "pair"}'),
            "labels: missing",
        ),
        (
            lambda f: (f / "ragsieve-model.json").write_text(
                '{"task": "pair", "labels": ["a", "b"]}'
            ),
            "support: none of the labels a, b",
        ),
    ],
)
def test_a_folder_that_is_not_a_usable_model_names_what_is_missing(
    tmp_path: Path, breaks, says: str
) -> None:
    folder = _folder(tmp_path)
    breaks(folder)
    with pytest.raises(ModelFolderError, match=f"^{folder}.*{says}"):
        load_model(folder)


def test_a_missing_folder_and_a_broken_onnx_file_are_named(tmp_path: Path) -> None:
    with pytest.raises(ModelFolderError, match=f"^{tmp_path / 'nope'}: no such folder"):
        load_model(tmp_path / "nope")
    folder = _folder(tmp_path)
    (folder / "model.onnx").write_bytes(b"not a graph")
    with pytest.raises(ModelFolderError, match="model.onnx: not an ONNX model onnxruntime"):
        load_model(folder)
    (folder / "model.onnx").unlink()
    nli_standin(tmp_path / "ok", ["paris"], [], WORDS)
    (folder / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelFolderError, match="tokenizer.json: not a tokenizers file"):
        load_model(folder)


def test_outputs_that_do_not_match_the_labels_are_refused(tmp_path: Path) -> None:
    folder = write_standin(
        tmp_path / "m",
        task="pair",
        features={"paris": [1.0]},
        head=[[1.0, 0.0]],
        bias=[0.0, 0.0],
        manifest={"labels": ["entailment", "neutral", "contradiction"]},
    )
    with pytest.raises(ModelFolderError, match="gives 2 logits but the manifest names 3"):
        load_model(folder)
    with pytest.raises(ModelFolderError, match="has rank 3; a pair model gives rank 2"):
        load_model(token_standin(tmp_path / "t", ["x"]), overrides={"task": "pair"})


def test_a_single_output_pair_model_reads_as_the_probability_of_consistent(
    tmp_path: Path,
) -> None:
    """HHEM-style: one logit, "consistent"; no contradiction label to report."""
    folder = write_standin(
        tmp_path / "hhem",
        task="pair",
        features={"paris": [1.0], "berlin": [0.0]},
        head=[[8.0]],
        bias=[-4.0],
        manifest={"labels": ["consistent"]},
    )
    model = LocalModel(read_manifest(folder))
    backed, not_backed = model.score([("paris", "the capital"), ("berlin", "the capital")])
    assert backed.support == pytest.approx(1 / (1 + math.exp(-4)))
    assert not_backed.support == pytest.approx(1 / (1 + math.exp(4)))
    assert backed.contradict is None


def test_a_hypothesis_first_model_gets_the_claim_first(tmp_path: Path) -> None:
    """A token model trained on (answer, context): the marked words are read from the first
    sequence, so the claim's unicorn is found and the context's is not."""
    folder = token_standin(tmp_path / "t", ["unicorn"], WORDS, hypothesis_first=True)
    model = LocalModel(read_manifest(folder))
    assert model.manifest.hypothesis_first
    clean, marked = model.score([("a unicorn city", "the city"), ("the city", "a unicorn city")])
    assert clean.spans == () and clean.support > 0.9
    [(start, end, _)] = marked.spans
    assert "a unicorn city"[start:end] == "unicorn"


async def test_concurrent_calls_share_one_model_one_batch_at_a_time(nli: Path) -> None:
    """Many judge calls in flight: each batch runs alone (the lock), so the thread cap holds,
    and the verdicts are those of calls made one after another."""
    import asyncio
    import threading
    import time

    model = LocalModel(read_manifest(nli))
    pairs = [[(f"{w} is a city", "france")] * 3 for w in ("paris", "berlin", "the", "a")] * 4
    alone = [model.score(p, batch_size=2) for p in pairs]
    runs = model.stats.runs
    real, guard, inside, most = model.session.run, threading.Lock(), [0], [0]

    def watched(*args, **kwargs):  # onnxruntime's own run, watched for overlap
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.01)
        try:
            return real(*args, **kwargs)
        finally:
            with guard:
                inside[0] -= 1

    model.session.run = watched
    together = await asyncio.gather(
        *(asyncio.to_thread(model.score, p, batch_size=2) for p in pairs)
    )
    assert [[s.support for s in r] for r in together] == [[s.support for s in r] for r in alone]
    assert model.stats.runs - runs == runs  # the same batches, none merged or lost
    assert most[0] == 1
