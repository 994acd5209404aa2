"""One variable at a time on text we did not write: chunk size on XQuAD-es, through the real CLI.

The golden set is XQuAD-es dev (297 questions, each answered by one of 240 paragraphs; category =
the paragraph's Wikipedia article), split into roles with a fixed salt. The retriever below is
BM25 over windows of ``chunking.words`` words (0 = whole paragraphs), mapped back to paragraph ids;
it reads the setting from ``eval --config``. Each setting is one ``ragsieve eval`` process, then
``ragsieve gate`` and ``ragsieve experiments list`` print what changed and the log line (the
README's example). Run from the repository root::

    .venv/bin/python bench/xquad_chunks.py [--data ../shared/data/xquad_es]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data" / "xquad_es"
SETTINGS = (0, 60, 120)


@functools.lru_cache(maxsize=4)
def _index(corpus: str, words: int) -> tuple[object, dict[str, str]]:
    from ragsieve.evaluators.golden.runs import BM25Retriever

    chunks: dict[str, str] = {}
    owner: dict[str, str] = {}
    for line in Path(corpus).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        tokens = row["text"].split()
        step = words or len(tokens)
        for i in range(0, len(tokens), step):
            cid = f"{row['id']}#{i}"
            chunks[cid] = " ".join(tokens[i : i + step])
            owner[cid] = row["id"]
    return BM25Retriever(chunks), owner


def search(query: str, k: int, config: dict[str, object] | None = None) -> list[str]:
    """BM25 over word windows; the paragraphs of the best windows, best first, deduplicated."""
    corpus = os.environ.get("XQUAD_CORPUS", str(DATA / "corpus.jsonl"))
    bm25, owner = _index(corpus, int(str((config or {}).get("chunking.words", 0))))
    out: list[str] = []
    for cid in bm25.search(query, 4 * k):  # type: ignore[attr-defined]
        if owner[cid] not in out:
            out.append(owner[cid])
    return out[:k]


def _golden(data: Path, folder: Path) -> Path:
    from ragsieve.evaluators.golden.sets import load_beir, write_golden

    titles = {
        json.loads(x)["id"]: json.loads(x)["title"]
        for x in (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    }
    gs = load_beir(data / "queries_dev.jsonl", data / "qrels_dev.tsv")
    cases = [
        c.model_copy(update={"category": titles[next(iter(c.relevant_chunks))]})
        if c.relevant_chunks
        else c
        for c in gs.cases
    ]
    return write_golden(folder / "golden_v1.jsonl", cases)


def _ragsieve(*args: object, cwd: Path) -> str:
    exe = Path(sys.executable).with_name("ragsieve")
    env = {**os.environ, "PYTHONPATH": str(HERE), "XQUAD_CORPUS": str(DATA / "corpus.jsonl")}
    done = subprocess.run(
        [str(exe), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"ragsieve {args[0]} failed: {done.stderr}")
    return done.stdout + done.stderr


def main() -> None:
    """Split, evaluate each chunk size, gate the first change, list the experiments."""
    global DATA
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    DATA = parser.parse_args().data.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _golden(DATA, work)
        print(
            _ragsieve(
                "golden",
                "split",
                "--golden",
                "golden_v1.jsonl",
                "--salt",
                "2b7e1516",
                "--by",
                "bench",
                cwd=work,
            ).splitlines()[0]
        )
        (work / "runs").mkdir()
        for i, words in enumerate(SETTINGS, start=1):
            _ragsieve(
                "eval",
                "--golden",
                "golden_v2.jsonl",
                "--retriever",
                "xquad_chunks:search",
                "-k",
                "5",
                "-k",
                "10",
                "--config",
                f"chunking.words={words}",
                "--out",
                f"runs/{i}.json",
                cwd=work,
            )
        print(
            _ragsieve(
                "gate",
                "--baseline",
                "runs/1.json",
                "--candidate",
                "runs/2.json",
                "--format",
                "markdown",
                cwd=work,
            )
        )
        print(_ragsieve("experiments", "list", "runs", cwd=work))


if __name__ == "__main__":
    main()
