"""Failure categories on a second, fresh deployment: conversations nobody here wrote, asked again
by other people in their own words.

Usage: ``.venv/bin/python bench/categories_fresh.py [--data DIR] [--seeds 21] [--replay DIR]``
-> prints a table, writes ``bench/results/categories_fresh.json``; the page
``docs/benchmarks/categories.md`` quotes it beside ``bench/categories.py``'s figures.

Why a second bench: ``bench/categories.py``'s held-out half was looked at while diagnosing, and
its repeats are XQuAD's translations only (two askings per failure). This one is built once and
run once per change, not studied: its topics are conversations of ``../shared/data/multiturn``
(CoQAR: CoQA stories from CNN, RACE exams, Wikipedia, Gutenberg and MCTest; CANARD: QuAC's
Wikipedia sections), none of which the growth code was developed on. The merge constants of
``signature.py`` were fitted on pairs drawn from CoQAR and CANARD too (``bench/paraphrase.py``),
so the re-wordings are not unseen in kind, only the traffic is.

Traffic: one conversation is one topic; each answered turn's evidence is one chunk (CoQAR: the
annotated rationale span; CANARD: QuAC's answer sentence), id ``<conversation>#<turn>``. Per
topic 2-6 turns fail and 3 others are answered right. A failing turn is asked by one to three
different people: CoQAR's annotators each wrote a standalone rewrite of the turn, and each
rewrite is an asking (CANARD has one rewrite, so its failures are asked once). The askings of
one failure fail the same way: the same retrieved chunks, and the same wrong value, the same
abstention or the same off-topic sentence. Kinds rotate: ``retrieval_miss`` (the turn's chunk is
not retrieved, three others of the story are, an invented value of the same shape is stated),
``changed_value`` (the chunk is retrieved, another value is stated), ``wrong_abstention`` and
``off_topic`` (another retrieved chunk's text is given). Two thirds of the topics are chosen to
be covered by a golden set holding two of their other turns (up to two: a topic whose turns are
all used by its failures and clean turns gets none, and is scored as uncovered). Everything
runs through the real CLI (``bench/categories.py``'s ``run``) and is scored by its ``score``,
on split ``fresh``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from categories import _cli, run, score, table  # noqa: E402
from e2e_traffic import ABSTAIN, DATA, Trace, _shape  # noqa: E402
from growth_replay import keep_run, regrow  # noqa: E402

SOURCES = ("coqar/train.jsonl", "canard/train.jsonl")
TOPICS = {"coqar": 24, "canard": 16}  # conversations per source (seeded sample)
COVERED_SHARE = 2 / 3
GOLDEN_PER_TOPIC = 2
CLEAN_PER_TOPIC = 3
KINDS = ("retrieval_miss", "changed_value", "wrong_abstention", "off_topic")
EXPECT = {
    "clean": "pass",
    "retrieval_miss": "retrieval",
    "changed_value": "generation",
    "wrong_abstention": "abstained_wrongly",
    "off_topic": "generation",
}


def _turns(data: Path) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """source → conversation → its answerable turns with evidence and at least one rewrite."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for rel in SOURCES:
        src = rel.split("/")[0]
        convs: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for line in (data / "multiturn" / rel).open():
            row = json.loads(line)
            evidence = (row.get("passages") or [row.get("answer")])[0]
            rewrites = (row.get("meta") or {}).get("all_rewrites") or [row.get("rewrite")]
            askings = list(dict.fromkeys(r.strip() for r in rewrites if r and r.strip()))
            if not row.get("answerable") or not evidence or not row.get("answer") or not askings:
                continue
            if row["answer"].strip().lower() in ("i don't know.", "cannotanswer"):
                continue
            convs[f"{src}:{row['conversation_id']}"].append(
                {**row, "askings": askings, "evidence": evidence.strip()}
            )
        out[src] = {c: ts for c, ts in convs.items() if len(ts) >= 8}
    return out


def _say(answer: str) -> str:
    text = answer.strip().rstrip(".")
    return f"{text[:1].upper()}{text[1:]}." if len(text.split()) > 3 else f"The answer is {text}."


class _Topic:
    """One conversation's chunks and the traces built on them."""

    def __init__(self, conv: str, rows: list[dict[str, Any]], rng: random.Random) -> None:
        self.conv, self.rng = conv, rng
        self.cid = {id(r): f"{conv}#{r['turn']}" for r in rows}
        self.chunks = {self.cid[id(r)]: r["evidence"] for r in rows}

    def others(self, me: str, k: int) -> list[str]:
        pool = [c for c in self.chunks if c != me]
        return self.rng.sample(pool, min(k, len(pool)))

    def trace(
        self, r: dict[str, Any], kind: str, q: str, answer: str, ids: list[str], **meta: Any
    ) -> Trace:
        me = self.cid[id(r)]
        return Trace(
            f"{kind}:{me}:{meta.get('asking', 0)}", kind, EXPECT[kind], "fresh", self.conv, me,
            q, answer, "en", "en", [{"id": c, "content": self.chunks[c]} for c in ids],
            me if me in ids else None, meta,
        )  # fmt: skip

    def failing(self, r: dict[str, Any], kind: str, values: list[str]) -> list[Trace]:
        """The askings of one failing turn: each of its people's rewrites asked (one to all of
        them), failing the same way."""
        rng, me = self.rng, self.cid[id(r)]
        ids = self.others(me, 3) if kind == "retrieval_miss" else [me, *self.others(me, 2)]
        rng.shuffle(ids)
        ctx = " ".join(self.chunks[c] for c in ids) + " " + self.chunks[me]
        answer = _failing_answer(kind, r, ids, me, self.chunks, ctx, values, rng)
        if answer is None:
            return []
        out: list[Trace] = []
        for a_i, q in enumerate(rng.sample(r["askings"], rng.randint(1, len(r["askings"])))):
            said = rng.choice(ABSTAIN["en"]) if kind == "wrong_abstention" else answer
            meta: dict[str, Any] = {"asking": a_i}
            if out:
                meta["repeat_of"] = out[0].trace_key
            if kind == "retrieval_miss":
                meta["missed"] = me
            out.append(self.trace(r, kind, q, said, ids, **meta))
        return out


def plan(data: Path, seed: int) -> tuple[list[Trace], list[dict[str, Any]], set[str]]:
    """(traces to send, golden cases, covered topics), deterministic for ``seed``."""
    rng = random.Random(seed)
    turns = _turns(data)
    topics = [
        (src, c) for src, n in TOPICS.items() for c in rng.sample(sorted(turns[src]), n)
    ]  # fmt: skip
    covered = {c for _, c in rng.sample(topics, round(len(topics) * COVERED_SHARE))}
    values = [
        t["answer"].strip().rstrip(".") for ts in turns.values() for v in ts.values() for t in v
    ]
    traces: list[Trace] = []
    golden: list[dict[str, Any]] = []
    for n_topic, (src, conv) in enumerate(topics):
        rows = rng.sample(turns[src][conv], len(turns[src][conv]))
        topic = _Topic(conv, rows, rng)
        fail = rows[: rng.randint(2, 6)]
        rest = rows[len(fail) :]
        clean, gold = rest[:CLEAN_PER_TOPIC], rest[CLEAN_PER_TOPIC:][:GOLDEN_PER_TOPIC]
        if conv in covered:
            golden += [
                {
                    "id": f"fresh-{topic.cid[id(r)]}",
                    "query": r["askings"][0],
                    "relevant_chunks": {topic.cid[id(r)]: 1},
                    "reference_answer": r["answer"],
                }
                for r in gold
            ]
        for r in clean:
            ids = [topic.cid[id(r)], *topic.others(topic.cid[id(r)], 2)]
            rng.shuffle(ids)
            traces.append(topic.trace(r, "clean", r["askings"][0], _say(r["answer"]), ids))
        for k, r in enumerate(fail):
            traces += topic.failing(r, KINDS[(n_topic + k) % len(KINDS)], values)
    return traces, golden, covered


def _failing_answer(
    kind: str,
    r: dict[str, Any],
    ids: list[str],
    me: str,
    chunks: dict[str, str],
    ctx: str,
    values: list[str],
    rng: random.Random,
) -> str | None:
    right = r["answer"].strip().rstrip(".")
    if kind == "wrong_abstention":
        return ""  # each asking gets its own refusal
    if kind == "off_topic":
        other = [c for c in ids if c != me]
        return _say(chunks[rng.choice(other)]) if other else None
    shape = _shape(right)
    low = ctx.lower()
    pool = [
        v for v in values
        if _shape(v) == shape and v.lower() not in low and v.lower() != right.lower()
        and 0 < len(v.split()) <= 6 and not re.fullmatch(r"(?i)yes|no", v)
    ]  # fmt: skip
    return _say(rng.choice(pool)) if pool else None


def with_golden(covered: set[str], golden: list[dict[str, Any]]) -> set[str]:
    """The covered topics that got a golden case: a CANARD conversation with few answered turns
    has none left after its failing and clean turns, and a topic with no golden case is not
    covered (calling it new is right)."""
    have = {str(g["id"]).removeprefix("fresh-").rsplit("#", 1)[0] for g in golden}
    return covered & have


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--seeds", default="21", help="Traffic plans, comma-separated.")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "categories_fresh.json")
    ap.add_argument(
        "--replay",
        type=Path,
        default=None,
        help="Keep each seed's job run in DIR/freshN (made the first time) and re-run golden"
        " growth alone on it (growth_replay.py).",
    )
    args = ap.parse_args()
    if not (args.data / "multiturn" / "coqar").exists():
        raise SystemExit(f"{args.data}/multiturn/coqar: not found (CoQAR and CANARD are needed)")
    runs = []
    for seed in (int(s) for s in args.seeds.split(",")):
        traces, golden, covered = plan(args.data, seed)
        t0 = time.perf_counter()
        if args.replay is not None:  # growth alone on a kept job run (growth_replay.py)
            kept = args.replay / f"fresh{seed}"
            if not (kept / "flagged.pkl").exists():
                keep_run(traces, golden, covered, kept, _cli)
            out, covered = regrow(kept, _cli)
            res = score(out, with_golden(covered, golden), "fresh")
        else:
            with tempfile.TemporaryDirectory() as tmp:
                out = run(traces, golden, Path(tmp))
                res = score(out, with_golden(covered, golden), "fresh")
        print(f"== seed {seed}: {len(traces)} traces, {len(golden)} golden cases")
        print(table(res))
        runs.append(
            {
                "seed": seed,
                "replayed": args.replay is not None,
                "traces": len(traces),
                "golden_cases": len(golden),
                "topics": sum(TOPICS.values()),
                "covered_topics": len(with_golden(covered, golden)),
                "seconds": round(time.perf_counter() - t0, 1),
                "results": res,
            }
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "categories_fresh",
        "data": "CoQAR stories and CANARD conversations (../shared/data/multiturn): a topic is a"
        " conversation, a failing turn is asked by each of its annotators' rewrites",
        "settings": "defaults (golden.*), offline judge, jobs run --all",
        "runs": runs,
    }
    args.out.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
