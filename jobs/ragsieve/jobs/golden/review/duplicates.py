"""The review's ``[d]uplicate``: which candidate this one repeats, and the merge that follows.

Dedup keeps two wordings of one failure apart when their questions look too different (the new
user's "cooling-off" pair sat at cosine 0.39 with the same chunk and the same wrong value). A
reviewer who sees that says of which candidate it is a duplicate: :func:`nearest` lists the open
and accepted candidates nearest it, each with why it is near (chunks the two failures share, the
same missed chunk, the same made-up value, how alike the askings are), and the reviewer picks one
by its number or types its id. :func:`merge_into` then folds the duplicate into the one it
repeats (the *survivor*): every asking, source, trace id and root-cause count moves there, with
the duplicate's own vector and signature among the survivor's askings, so a later repeat of
either wording joins the survivor (its normalised text, or dedup through that asking). The
duplicate's row stays as the record (status ``merged``, ``merged_into``; never matched,
categorised, reviewed or promoted again) and the survivor lists what it took in (``merged``).

A person's word that two wordings are one failure, or (a split, ``decisions.split_off``) that
they are two, is what the automatic matching would learn from. :func:`reviewed_pairs` reads
both kinds back. No fit reads them yet: the dedup constants are fitted only on licence-clean
questions (``bench/paraphrase_clean.py``), and ``ragsieve judges fit`` learns judge verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import click
import numpy as np

from ragsieve.collector.store import Store
from ragsieve.jobs.golden.growth.candidates import MAX_SOURCES, add_asking
from ragsieve.jobs.golden.growth.merge import majority_cause
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo, decode_vector
from ragsieve.jobs.golden.growth.signature import DedupRule, Signature, from_body

MERGED = "merged"  # a row a reviewer folded into another (``merged_into``)
SHOWN = 5  # nearest candidates offered
OPEN = ("candidate", "accepted")  # what a duplicate may be folded into


@dataclass(frozen=True)
class Near:
    """An open or accepted candidate near the one in review, and why."""

    row: Candidate
    cosine: float  # the nearest pair of their askings
    why: tuple[str, ...]  # what their failures share, then how alike they are asked


def _vectors(c: Candidate) -> list[np.ndarray]:
    """The row's asking vectors: its founding query's, then each merged wording's."""
    vecs = [c.embedding] if c.embedding is not None else []
    for item in c.body.get("asking_index") or ():
        v = decode_vector(item.get("embedding"))
        if v is not None:
            vecs.append(v)
    return vecs


def _cosine(a: Candidate, b: Candidate) -> float:
    va, vb = _vectors(a), _vectors(b)
    if not va or not vb:
        return 0.0
    return float(np.max(np.stack(va) @ np.stack(vb).T))


def shared(a: Signature, b: Signature) -> list[str]:
    """What two failures have in common, as a reviewer reads it (empty: nothing)."""
    out = []
    if a.missed and a.missed == b.missed:
        out.append(f"the same missed chunk {a.missed}")
    if a.values & b.values:
        out.append(f"the same made-up value {', '.join(sorted(a.values & b.values))}")
    if both := a.chunks & b.chunks:
        out.append(f"{len(both)} of {len(a.chunks | b.chunks)} chunks shared ({_few(both)})")
    return out


def _few(ids: set[str] | frozenset[str]) -> str:
    first = sorted(ids)[:3]
    return ", ".join(first) + (", ..." if len(ids) > 3 else "")


def nearest(repo: CandidateRepo, c: Candidate, k: int = SHOWN) -> list[Near]:
    """The open and accepted candidates nearest ``c``: those whose failure shares something
    with its own first (the more, the nearer), then by how alike their askings are; a row that
    shares nothing is shown only when asked at the lowest cosine any dedup path merges at."""
    mine = from_body(c.body, c.norm_query, c.root_cause)
    floor = DedupRule().floor
    out = []
    for r in repo.select(OPEN):
        if r.id == c.id or _audit(r):
            continue
        cos = _cosine(c, r)
        why = shared(mine, from_body(r.body, r.norm_query, r.root_cause))
        if why or cos >= floor:
            out.append(Near(r, cos, (*why, f"asked alike: cosine {cos:.2f}")))
    out.sort(key=lambda n: (-(len(n.why) - 1), -n.cosine, n.row.id))
    return out[:k]


def ask_duplicate(repo: CandidateRepo, c: Candidate, reviewer: str) -> Candidate | None:
    """The review's ``d``: show the nearest candidates, take a number or an id, merge ``c`` into
    it. Returns the survivor (None when the reviewer went back with ``-``)."""
    near = nearest(repo, c)
    if near:
        click.echo("Nearest open or accepted candidates:")
    for i, n in enumerate(near, 1):
        click.echo(f"  {i}. {n.row.id} [{n.row.status}] {n.row.query}")
        click.echo(f"       near: {'; '.join(n.why)}")
    if not near:
        click.echo("  no open or accepted candidate shares a chunk or a value with it")
    while True:
        raw = click.prompt(
            "Duplicate of which? (its number, or a candidate id; '-' to go back)"
        ).strip()
        if raw == "-":
            return None
        target = near[int(raw) - 1].row if raw.isdigit() and 0 < int(raw) <= len(near) else None
        target = target or repo.get(raw)
        if target is None or target.id == c.id or target.status not in OPEN or _audit(target):
            click.echo(f"  {raw}: not the number of one above nor an open or accepted candidate")
            continue
        merge_into(repo, c, target, by=reviewer)
        click.echo(f"merged {c.id} into {target.id} (a duplicate of it)")
        return target


def _audit(row: Candidate) -> bool:
    """An audit row (a pass sampled for a person to check) is no failure to fold into."""
    return row.id.startswith("audit:")


def merge_into(repo: CandidateRepo, dup: Candidate, survivor: Candidate, *, by: str) -> None:
    """Fold ``dup`` into ``survivor`` (module docstring) and save both."""
    at = datetime.now(UTC).isoformat()
    s, d = survivor.body, dup.body
    for q in d.get("askings") or [dup.query]:
        add_asking(s, str(q))
    traces = [t for t in dup.source_trace_ids if t not in set(survivor.source_trace_ids)]
    s["source_trace_ids"] = [*survivor.source_trace_ids, *traces]
    spans = list(s.get("source_span_ids") or [])
    s["source_span_ids"] = [*spans, *(x for x in d.get("source_span_ids") or [] if x not in spans)]
    why = f"a reviewer ({by}): a duplicate of {survivor.id}"
    sources = s.setdefault("sources", [])
    for src in d.get("sources") or []:
        if src.get("trace_id") in traces and len(sources) < MAX_SOURCES:
            sources.append({**src, "merged_because": why})
    s["merged_because"] = {**(s.get("merged_because") or {}), **dict.fromkeys(traces, why)}
    s["asking_index"] = [*(s.get("asking_index") or []), *_index_entries(dup)]
    causes = dict(s.get("root_causes") or {})
    for cause, n in (d.get("root_causes") or {}).items():
        causes[cause] = causes.get(cause, 0) + int(n)
    s["root_causes"] = causes
    survivor.root_cause = majority_cause(causes, survivor.root_cause)
    survivor.seen += dup.seen
    entry = {"id": dup.id, "query": dup.query, "askings": d.get("askings") or [dup.query]}
    s.setdefault("merged", []).append({**entry, "trace_ids": traces, "by": by, "at": at})
    dup.status = MERGED
    d["merged_into"] = survivor.id
    reason = f"duplicate of {survivor.id}"
    d["review"] = {**(d.get("review") or {}), "decision": MERGED, "by": by, "at": at}
    d["review"]["reason"] = reason
    repo.save([survivor, dup])


def _index_entries(dup: Candidate) -> list[dict[str, Any]]:
    """The duplicate's askings as the survivor indexes them: its founding query (vector and
    signature), then every wording it had indexed itself."""
    d = dup.body
    own = {"query": dup.query, "embedding": d.get("embedding"), "signature": d.get("signature")}
    return [own, *(d.get("asking_index") or [])] if d.get("embedding") else []


def reviewed_pairs(store: Store) -> list[dict[str, Any]]:
    """Every pair of wordings a person decided on: ``same`` True for a duplicate merged in
    review, False for an asking split off as a different failure (or no failure). Each pair
    names both wordings, their failures' signatures when kept, who decided and when."""
    out: list[dict[str, Any]] = []
    rows = CandidateRepo(store).select()
    by_id = {r.id: r for r in rows}
    for r in rows:
        for m in r.body.get("merged") or ():
            gone = by_id.get(str(m.get("id")))
            sig = (gone.body.get("signature") if gone else None) or {}
            out.append(_pair(r, str(m.get("query")), sig, True, m))
        for s in r.body.get("split_off") or ():
            row = by_id.get(str(s.get("into")))
            sig = (row.body.get("signature") if row else None) or {}
            out.append(_pair(r, str(s.get("query")), sig, False, s))
    return out


def _pair(
    r: Candidate, other: str, sig: dict[str, Any], same: bool, entry: dict[str, Any]
) -> dict[str, Any]:
    return {
        "a": r.query,
        "b": other,
        "same": same,
        "a_signature": r.body.get("signature") or {},
        "b_signature": sig,
        "by": entry.get("by"),
        "at": entry.get("at"),
    }


__all__ = ["MERGED", "Near", "ask_duplicate", "merge_into", "nearest", "reviewed_pairs", "shared"]
