"""Who a trace belongs to: session, user, tags and metadata, read from every span (root wins)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ragsieve.collector.derive.trace.attrs import (
    as_str,
    get_str,
    mapping,
    parse_lenient,
    parse_object,
)
from ragsieve.collector.derive.trace.classify import TraceTree
from ragsieve.collector.wire.spans import SpanRecord


def identity(
    tree: TraceTree, root: SpanRecord | None
) -> tuple[str | None, str | None, tuple[str, ...], dict[str, Any]]:
    """(session_id, user_id, tags, merged metadata) per SPAN_SPEC §3.4.9 (root wins)."""
    metadata: dict[str, Any] = {}
    tags: list[str] = []
    sessions: Counter[str] = Counter()
    ordered = [s for s in tree.spans if s is not root] + ([root] if root else [])
    for span in ordered:
        attrs = mapping(span.attributes)
        meta = (
            parse_object(attrs.get("metadata"))
            or parse_object(attrs.get("langfuse.trace.metadata"))
            or {}
        )
        metadata.update(meta)
        for key in ("tag.tags", "langfuse.trace.tags"):
            raw = attrs.get(key)
            raw = parse_lenient(raw) if isinstance(raw, str) else raw
            for tag in raw if isinstance(raw, list) else []:
                if isinstance(tag, str) and tag not in tags:
                    tags.append(tag)
        if sid := get_str(attrs, "session.id"):
            sessions[sid] += 1
    rattrs = mapping(root.attributes) if root else {}
    session = get_str(rattrs, "session.id") or (sessions.most_common(1)[0][0] if sessions else None)
    session = session or _any_attr(
        tree,
        (
            "gen_ai.conversation.id",
            "langfuse.session.id",
            "traceloop.association.properties.session_id",
        ),
    )
    session = session or next(
        (
            as_str(metadata.get(k))
            for k in ("session_id", "conversation_id", "thread_id")
            if as_str(metadata.get(k))
        ),
        None,
    )
    user = (
        get_str(rattrs, "user.id")
        or _any_attr(
            tree,
            (
                "user.id",
                "enduser.id",
                "langfuse.user.id",
                "traceloop.association.properties.user_id",
            ),
        )
        or as_str(metadata.get("user_id"))
    )
    return session, user, tuple(tags), metadata


def trace_identity(
    tree: TraceTree, top: SpanRecord, trace_id: str, revision: int
) -> dict[str, Any]:
    """Ids, revision, and where the trace came from (resource and instrumentation scopes)."""
    resource = mapping(top.resource)
    scopes = {s.scope_name for s in tree.spans if isinstance(s.scope_name, str)}
    return {
        "trace_id": trace_id,
        "span_id": top.span_id,
        "revision": revision,
        "project": as_str(resource.get("openinference.project.name"))
        or as_str(resource.get("service.name")),
        "service_name": as_str(resource.get("service.name")),
        "environment": as_str(resource.get("deployment.environment.name"))
        or as_str(resource.get("deployment.environment")),
        "instrumentation": tuple(sorted(n for n in scopes if n)),
    }


def _any_attr(tree: TraceTree, keys: Sequence[str]) -> str | None:
    for key in keys:
        for span in tree.spans:
            if value := get_str(mapping(span.attributes), key):
                return value
    return None
