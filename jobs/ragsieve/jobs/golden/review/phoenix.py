"""Review in Phoenix: push open candidates to a dataset (append only), pull reviewers' edits back.

Uses Phoenix's REST API: ``GET /v1/datasets?name=``, ``POST /v1/datasets/upload?sync=true``
with ``action="append"`` (which creates the dataset when it is missing and never replaces the
examples of an existing one) and ``GET /v1/datasets/{id}/examples`` (the latest version).
Each example carries the candidate id as its ``example_id`` and in ``metadata.candidate_id``,
and the source span id so that Phoenix links it to the trace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from ragsieve.evaluators.errors import ConfigError, RagsieveError
from ragsieve.jobs.golden.growth.categories import CategorySummary
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo
from ragsieve.jobs.golden.review.decisions import decide
from ragsieve.jobs.golden.review.keys import parse_chunks
from ragsieve.jobs.golden.review.suggest import REVIEW_CAUSES, acceptance_gap, evidence_chunks

ACCEPT = {"accept", "accepted", "yes", "ok"}
REJECT = {"reject", "rejected", "no"}


class PhoenixError(RagsieveError):
    """Phoenix answered with an error or could not be reached."""


class PhoenixDatasets:
    """The three dataset endpoints ragsieve needs, over one httpx client."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        if not base_url:
            raise ConfigError("phoenix.base_url: not set (e.g. http://127.0.0.1:6006)")
        headers = {"accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s)

    def close(self) -> None:
        """Release the connection pool."""
        self._http.close()

    def __enter__(self) -> PhoenixDatasets:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, url: str, **kw: Any) -> Any:
        try:
            resp = self._http.request(method, url, **kw)
        except httpx.HTTPError as exc:
            raise PhoenixError(f"phoenix {self.base_url}: {exc}") from exc
        if resp.status_code >= 400:
            raise PhoenixError(
                f"phoenix {method} {url}: HTTP {resp.status_code}: {resp.text[:300]}"
            )
        return resp.json()

    def dataset_id(self, name: str) -> str | None:
        """The id of the dataset called ``name``, or None."""
        data = self._call("GET", "/v1/datasets", params={"name": name}).get("data") or []
        for d in data:
            if d.get("name") == name:
                return str(d["id"])
        return None

    def append(self, name: str, examples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Append examples (``input``, ``output``, ``metadata``, ``span_id``, ``id``)."""
        body = {
            "action": "append",
            "name": name,
            "description": "ragsieve golden-set candidates awaiting review",
            "inputs": [dict(e["input"]) for e in examples],
            "outputs": [dict(e["output"]) for e in examples],
            "metadata": [dict(e["metadata"]) for e in examples],
            "span_ids": [e.get("span_id") for e in examples],
            "example_ids": [e.get("id") for e in examples],
        }
        out: dict[str, Any] = (
            self._call("POST", "/v1/datasets/upload", params={"sync": "true"}, json=body).get(
                "data"
            )
            or {}
        )
        return out

    def examples(self, dataset_id: str) -> list[dict[str, Any]]:
        """Examples of the latest version of a dataset."""
        data = self._call("GET", f"/v1/datasets/{dataset_id}/examples").get("data") or {}
        return list(data.get("examples") or [])


def _example(c: Candidate, summary: CategorySummary | None) -> dict[str, Any]:
    b = c.body
    return {
        "id": c.id,
        "span_id": (b.get("source_span_ids") or [None])[0],
        "input": {"query": c.query},
        "output": {
            "reference_answer": b.get("reference_answer") or "",
            # what the evidence names, as in the terminal review (golden/suggest.py)
            "relevant_chunks": sorted(b.get("relevant_chunks") or evidence_chunks(b)[0]),
        },
        "metadata": {
            "candidate_id": c.id,
            "decision": "",
            "reason": "",
            "reviewer": "",
            "category": c.category,
            "category_name": summary.name if summary else None,
            "new_category": bool(summary and summary.new),
            "root_cause": c.cause,  # as reviewed; a reviewer may change it here
            "judged_root_cause": c.root_cause,
            "seen": c.seen,
            "source_trace_ids": c.source_trace_ids,
            "answer": b.get("answer"),
            "retrieved_chunk_ids": list(b.get("suggested_chunk_ids") or []),
            "judges": [
                {k: j.get(k) for k in ("evaluator", "label", "score", "explanation")}
                for j in b.get("judges", [])
            ],
        },
    }


def push(
    repo: CandidateRepo,
    client: PhoenixDatasets,
    dataset: str,
    summaries: Mapping[str, CategorySummary],
    *,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Append every open candidate not yet in ``dataset``; returns counts and the dataset id."""
    rows = [
        c
        for c in repo.select(["candidate"])
        if (c.body.get("phoenix") or {}).get("dataset") != dataset
    ]
    rows.sort(key=lambda c: (not _is_new(summaries, c), -c.seen, c.id))
    examples = [_example(c, summaries.get(c.category or "")) for c in rows]
    existing = client.dataset_id(dataset)
    if dry_run or not examples:
        return {"dataset": dataset, "dataset_id": existing, "pushed": 0, "would_push": len(rows)}
    data = client.append(dataset, examples)
    stamp = datetime.now(UTC).isoformat()
    for c, ex in zip(rows, examples, strict=True):
        c.body["phoenix"] = {
            "dataset": dataset,
            "dataset_id": data.get("dataset_id"),
            "version_id": data.get("version_id"),
            "example_id": ex["id"],
            "pushed_at": stamp,
            "pushed_output": ex["output"],
        }
    repo.save(rows)
    return {
        "dataset": dataset,
        "dataset_id": data.get("dataset_id"),
        "created": existing is None,
        "pushed": len(rows),
    }


def _is_new(summaries: Mapping[str, CategorySummary], c: Candidate) -> bool:
    s = summaries.get(c.category or "")
    return bool(s and s.new)


def _chunks(value: Any) -> dict[str, int]:
    if isinstance(value, Mapping):
        return {str(k): int(v) for k, v in value.items()}
    if isinstance(value, str):
        return parse_chunks(value)
    if isinstance(value, list):
        return {str(v): 1 for v in value if str(v).strip()}
    return {}


PULL_COUNTS = (
    "edited",
    "accepted",
    "rejected",
    "unchanged",
    "unknown",
    "already_decided",
    "needs_root_cause",  # accepted in Phoenix but undetermined, with no root cause named
    "needs_chunk",  # accepted with a root cause that says it has an answer, and no chunk
)
"""What ``golden pull`` counts."""


def pull(repo: CandidateRepo, client: PhoenixDatasets, dataset: str) -> dict[str, Any]:
    """Apply reviewers' edits (output) and decisions (``metadata.decision``) from Phoenix."""
    ds_id = client.dataset_id(dataset)
    if ds_id is None:
        raise ConfigError(f"phoenix.dataset: no dataset named {dataset!r}; run `golden push` first")
    counts = dict.fromkeys(PULL_COUNTS, 0)
    for ex in client.examples(ds_id):
        meta = ex.get("metadata") or {}
        c = repo.get(str(meta.get("candidate_id") or ex.get("id")))
        if c is None:
            counts["unknown"] += 1
            continue
        if c.status != "candidate":
            counts["already_decided"] += 1
            continue
        output = ex.get("output") or {}
        pushed = (c.body.get("phoenix") or {}).get("pushed_output")
        changed = False
        if output != pushed:
            ref = output.get("reference_answer")
            c.body["reference_answer"] = str(ref).strip() if ref and str(ref).strip() else None
            c.body["relevant_chunks"] = _chunks(output.get("relevant_chunks"))
            c.body.setdefault("review", {})["edited_by"] = meta.get("reviewer") or "phoenix"
            c.body.setdefault("phoenix", {})["pushed_output"] = output
            counts["edited"] += 1
            changed = True
        decision = str(meta.get("decision") or "").strip().lower()
        who = str(meta.get("reviewer") or "phoenix")
        named = str(meta.get("root_cause") or "")
        renamed = named in REVIEW_CAUSES and named != c.cause  # the reviewer's root cause
        if renamed:
            c.body.setdefault("review", {})["root_cause"] = named
        if decision in ACCEPT:
            if not changed and not c.body.get("relevant_chunks"):
                # accepted as shown: the relevant chunks pushed were the evidence's pre-fill
                c.body["relevant_chunks"] = _chunks(output.get("relevant_chunks"))
            gap = acceptance_gap(c.root_cause, c.body)
            if gap is not None:  # left open: a root cause, or the chunk that answers, is missing
                counts[f"needs_{gap}"] += 1
                repo.save([c])
                continue
            decide(repo, c, "accepted", who, None, via="phoenix")
            counts["accepted"] += 1
        elif decision in REJECT:
            why = str(meta.get("reason") or "rejected in Phoenix")
            decide(repo, c, "rejected", who, why, via="phoenix")
            counts["rejected"] += 1
        elif changed or renamed:
            repo.save([c])
        else:
            counts["unchanged"] += 1
    return {"dataset": dataset, "dataset_id": ds_id, **counts}
