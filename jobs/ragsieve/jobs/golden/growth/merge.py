"""Three-way merge of one candidate: what a save changed since it read the row, onto what is
stored now.

Review (a person) and golden growth (the job) each read a candidate, change a few fields and save.
When the stored row moved in between (its ``version`` grew), the save does not overwrite it:
:func:`merge` takes the stored row (*theirs*), the row as the saver read it (*base*) and the
saver's row (*mine*), and keeps both sides' changes field by field:

- a field only one side changed takes that side's value (a nested dict such as ``review`` is
  merged key by key the same way);
- provenance is a union: ``source_trace_ids``, ``source_span_ids``, ``sources`` and
  ``askings`` keep every trace and wording either side merged, ``merged_because`` every reason,
  ``asking_index`` every indexed wording and ``merged`` every duplicate a reviewer folded in;
  ``root_causes`` and ``seen`` add both sides' increments, and the root cause is the majority of
  the merged counts;
- a person's decision (``status`` with ``review.decision``) saved in between is never undone by a
  save that did not itself decide; two different decisions raise :class:`CandidateConflict`;
- any other field both sides changed takes the saver's value (the later write).

``base`` is None for a row the saver created without reading (a new candidate whose id another
writer inserted first): every field of *mine* counts as changed, and provenance is still a union.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol, TypeVar

from ragsieve.evaluators.errors import StoreError


class Row(Protocol):
    """The fields of a candidate row a merge reads and writes (``repo.Candidate``)."""

    id: str
    status: str
    norm_query: str
    category: str | None
    root_cause: str | None
    seen: int
    body: dict[str, Any]


R = TypeVar("R", bound=Row)

UNION_LISTS = ("source_trace_ids", "source_span_ids")
_MISSING = object()


class CandidateConflict(StoreError):
    """Two people decided the same candidate differently; the later save is refused (exit 1:
    the earlier decision stands, and the reviewer sees whose it is)."""


def _decision(c: Row | None) -> Any:
    if c is None:
        return None, None, None
    review = c.body.get("review") or {}
    return review.get("decision"), review.get("by"), review.get("at")


def _copy(value: Any) -> Any:
    return value if value is _MISSING else copy.deepcopy(value)


def _pick(base: Any, mine: Any, theirs: Any) -> Any:
    """One field: the side that changed it; the saver's value when both did."""
    if mine == base:
        return _copy(theirs)
    if theirs == base or theirs == mine:
        return _copy(mine)
    if isinstance(mine, dict) and isinstance(theirs, dict):
        base_d = base if isinstance(base, dict) else {}
        return _merge_dicts(base_d, mine, theirs)
    return _copy(mine)


def _merge_dicts(
    base: dict[str, Any], mine: dict[str, Any], theirs: dict[str, Any]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in dict.fromkeys([*theirs, *mine]):
        value = _pick(base.get(key, _MISSING), mine.get(key, _MISSING), theirs.get(key, _MISSING))
        if value is not _MISSING:
            out[key] = value
    return out


def _union(theirs: list[Any], mine: list[Any]) -> list[Any]:
    """``theirs`` then what only ``mine`` holds, in ``mine``'s order."""
    seen = set(map(_key, theirs))
    return [*copy.deepcopy(theirs), *(copy.deepcopy(m) for m in mine if _key(m) not in seen)]


def _key(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    if "trace_id" in item:  # a provenance entry: one per trace
        return ("trace", item.get("trace_id"))
    if "id" in item:  # a duplicate folded in by a reviewer (``merged``): one per candidate
        return ("id", item.get("id"))
    return ("query", item.get("query"))  # an indexed asking: one per wording


def _counts(base: dict[str, int], mine: dict[str, int], theirs: dict[str, int]) -> dict[str, int]:
    """Counts with both sides' increments since ``base``."""
    out = dict(theirs)
    for k, n in mine.items():
        out[k] = out.get(k, 0) + max(0, int(n) - int(base.get(k, 0)))
    return out


def majority_cause(causes: dict[str, int], current: str | None) -> str | None:
    """The root cause most merged failures had; a tie keeps ``current`` (the earlier majority).

    The others stay counted in the candidate's ``root_causes``.
    """
    if not causes:
        return current
    top = max(causes.values())
    if current in causes and causes[current] == top:
        return current
    return min(c for c, n in causes.items() if n == top)


def _merge_body(
    base: dict[str, Any], mine: dict[str, Any], theirs: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, int]]:
    """The merged body (provenance a union, counts added) and its merged root-cause counts."""
    body = _merge_dicts(base, mine, theirs)
    for key in (*UNION_LISTS, "sources", "askings", "asking_index", "merged"):
        if key in mine or key in theirs:
            body[key] = _union(list(theirs.get(key) or []), list(mine.get(key) or []))
    if "merged_because" in mine or "merged_because" in theirs:
        body["merged_because"] = {
            **(mine.get("merged_because") or {}),
            **(theirs.get("merged_because") or {}),
        }
    causes = _counts(
        base.get("root_causes") or {},
        mine.get("root_causes") or {},
        theirs.get("root_causes") or {},
    )
    if causes:
        body["root_causes"] = causes
    return body, causes


def merge(base: R | None, mine: R, theirs: R) -> R:
    """The row to store: ``theirs`` with ``mine``'s changes since ``base`` (module docstring).

    Returns a new row carrying ``theirs``' version (the one the next conditional write expects).
    """
    b_body = base.body if base is not None else {}
    body, causes = _merge_body(b_body, mine.body, theirs.body)
    b = base
    status = _pick(b.status if b else _MISSING, mine.status, theirs.status)
    d_base, d_mine, d_theirs = _decision(b), _decision(mine), _decision(theirs)
    if d_theirs != d_base and d_mine != d_base and d_mine != d_theirs:
        raise CandidateConflict(
            f"candidate {mine.id}: {d_theirs[1] or 'someone'} decided {d_theirs[0]!r} at"
            f" {d_theirs[2]} while this save decided {d_mine[0]!r}; reload and decide again"
        )
    if d_theirs != d_base and d_mine == d_base:  # a decision saved in between stands
        status = theirs.status
        body["review"] = copy.deepcopy(theirs.body.get("review"))

    root_cause = _pick(b.root_cause if b else _MISSING, mine.root_cause, theirs.root_cause)
    if causes and b is not None and mine.root_cause != b.root_cause != theirs.root_cause:
        root_cause = majority_cause(causes, theirs.root_cause)
    sources = len(body.get("source_trace_ids") or ())
    if b is None:
        seen = max(mine.seen, theirs.seen, sources)
    else:
        seen = max(theirs.seen + max(0, mine.seen - b.seen), sources)
    out = copy.copy(theirs)  # a row of the caller's class, at theirs' version
    out.__dict__.pop("embedding", None)  # a cached vector of theirs' body
    out.status, out.root_cause, out.seen, out.body = status, root_cause, seen, body
    out.norm_query = _pick(b.norm_query if b else _MISSING, mine.norm_query, theirs.norm_query)
    out.category = _pick(b.category if b else _MISSING, mine.category, theirs.category)
    return out


__all__ = ["CandidateConflict", "Row", "majority_cause", "merge"]
