"""Turn the spans of one trace into one normalized RagInteraction (SPAN_SPEC §3)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ragsieve.collector.derive.assemble import Assembly
from ragsieve.collector.derive.fields import outcome
from ragsieve.collector.derive.trace.classify import TraceTree, local_root
from ragsieve.collector.wire.spans import LogEvent, SpanRecord
from ragsieve.evaluators.records import Feedback, RagInteraction

__all__ = ["derive", "local_root"]

logger = logging.getLogger(__name__)


def derive(
    spans: Sequence[SpanRecord],
    log_events: Sequence[LogEvent] = (),
    feedback: Sequence[Feedback] = (),
    *,
    revision: int = 1,
    late_spans: int = 0,
) -> RagInteraction | None:
    """Derive the interaction record of one trace; None only when there are no spans.

    Pure and deterministic: the same span set (in any order, with duplicates) gives the same
    record. Odd data degrades the record and sets its quality flags instead of raising.

    Example:
        >>> record = derive(store.spans(trace_id), store.log_events(trace_id))  # doctest: +SKIP
        >>> record.query, [d.id for d in record.documents], record.answer  # doctest: +SKIP
    """
    tree = TraceTree.build(list(spans or ()))
    if not tree.spans:
        return None
    logs = [e for e in log_events or () if isinstance(e, LogEvent)]
    fbs = [f for f in feedback or () if isinstance(f, Feedback)]
    try:
        return Assembly(tree, logs, fbs, revision, late_spans).record()
    except Exception:  # last resort: a record must exist for every stored trace
        logger.exception(
            "could not derive trace %s; storing a minimal record", tree.spans[0].trace_id
        )
        return _minimal(tree, fbs, revision, late_spans)


def _minimal(
    tree: TraceTree, fbs: list[Feedback], revision: int, late_spans: int
) -> RagInteraction:
    root = tree.root() or tree.tops()[0]
    start = min((s.start_ns for s in tree.spans if isinstance(s.start_ns, int)), default=0)
    return RagInteraction(
        trace_id=str(root.trace_id),
        span_id=str(root.span_id),
        revision=revision,
        started_at=outcome.to_datetime(start),
        status="incomplete",
        completeness="no_root" if tree.root() is None else "missing_generation",
        feedback=tuple(fbs),
        feedback_polarity=outcome.feedback_polarity(fbs),
        late_spans=late_spans,
        span_count=len(tree.spans),
        attributes={"ragsieve.derive_error": True},
    )
