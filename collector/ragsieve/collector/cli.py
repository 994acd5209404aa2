"""``ragsieve collector serve`` and ``ragsieve interactions list|show``."""

from __future__ import annotations

import json
import os
import re
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from ragsieve.collector.cliopts import (
    DURATION,
    SettingsSource,
    clip,
    json_option,
    opened_store,
    store_option,
)
from ragsieve.evaluators.errors import ConfigError

if TYPE_CHECKING:
    from ragsieve.collector.settings import CollectorSettings

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
GRPC_PORT_HELP = "OTLP/gRPC port (default 4317; 0 = off)."


TRACE_PREFIX = re.compile(r"[0-9a-f]{6,32}")


@click.group()
def collector() -> None:
    """The OTLP receiver: OTLP/HTTP (4318) and OTLP/gRPC (4317), plus /v1/feedback."""


@collector.command("serve")
@click.option("--host", default=None, help="Bind address (default 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port (default 4318).")
@click.option("--grpc-port", type=int, default=None, help=GRPC_PORT_HELP)
@store_option
@click.option("--forward-otlp", default=None, help="Forward spans to this OTLP/HTTP traces URL.")
@click.option("--token-env", default=None, help="Env var holding the required bearer token.")
@click.pass_obj
def serve(
    obj: SettingsSource,
    host: str | None,
    port: int | None,
    grpc_port: int | None,
    store: str | None,
    forward_otlp: str | None,
    token_env: str | None,
) -> None:
    """Receive OTLP spans over HTTP (/v1/traces, /v1/logs) and gRPC, feedback on /v1/feedback."""
    import uvicorn

    from ragsieve.collector.serve.app import create_app
    from ragsieve.collector.serve.server import bind_socket, uvicorn_config
    from ragsieve.collector.store import masked_url, open_store

    settings = obj.settings(
        **{
            "store": store,
            "collector.host": host,
            "collector.port": port,
            "collector.grpc_port": grpc_port,
            "collector.forward_otlp": forward_otlp,
            "collector.token_env": token_env,
        }
    )
    cfg = settings.collector
    token = resolve_token(cfg.token_env)
    sock = bind_socket(cfg.host, cfg.port)  # a port in use: one line, exit 2, nothing else
    port = int(sock.getsockname()[1])
    grpc_port = grpc_port_to_serve(cfg)
    if (warning := open_warning(cfg, token)) is not None:
        click.echo(warning, err=True)
    app = create_app(open_store(settings.store), cfg, token=token, grpc_port=grpc_port or None)
    grpc = f" and grpc://{cfg.host}:{grpc_port}" if grpc_port else ""
    click.echo(
        f"ragsieve collector listening on http://{cfg.host}:{port}/v1/traces{grpc}"
        f" (store {masked_url(settings.store)}){forward_note(settings)}",
        err=True,
    )
    config = uvicorn_config(app, cfg.host, port, max_connections=cfg.max_connections)
    uvicorn.Server(config).run(sockets=[sock])


def forward_note(settings: Any) -> str:
    """``; forwarding every span to <url> (Phoenix at <base>)`` for the start banner, or ``""``."""
    from ragsieve.collector.store import masked_url

    url = settings.collector.forward_otlp
    if not url:
        return ""
    base = (getattr(getattr(settings, "phoenix", None), "base_url", None) or "").rstrip("/")
    phoenix = f" (Phoenix at {base})" if base and url.startswith(base + "/") else ""
    return f"; forwarding every span to {masked_url(url)}{phoenix}"


def check_grpc_port(host: str, port: int) -> None:
    """Refuse a gRPC port in use before anything prints (0 = gRPC off; nothing to check)."""
    from ragsieve.collector.serve.server import bind_socket

    if port:
        bind_socket(host, port, what="--grpc-port").close()


def grpc_port_to_serve(cfg: CollectorSettings) -> int:
    """The OTLP/gRPC port to serve (0 = off), checked before anything prints.

    A port the user asked for (``--grpc-port``, the env var or the config file) that cannot be
    bound stops the command (ConfigError: one line, exit 2). The *default* port in use only
    turns gRPC off, with one line: the user asked for nothing on gRPC, and another collector
    (an OpenTelemetry Collector, Phoenix) often holds 4317 already.
    """
    if not cfg.grpc_port:
        return 0
    try:
        check_grpc_port(cfg.host, cfg.grpc_port)
    except ConfigError:
        if "grpc_port" in cfg.model_fields_set:
            raise
        click.echo(
            f"ragsieve: OTLP/gRPC off: the default port {cfg.host}:{cfg.grpc_port} is in use;"
            " OTLP/HTTP goes on (choose a gRPC port with --grpc-port or collector.grpc_port;"
            " 0 = off)",
            err=True,
        )
        return 0
    return cfg.grpc_port


def open_warning(cfg: CollectorSettings, token: str | None) -> str | None:
    """The warning for a receiver that anyone on the network can write to, or None."""
    if token is not None or cfg.host in LOOPBACK:
        return None
    return (
        f"warning: listening on {cfg.host} without a bearer token: anyone who can reach"
        " this port can write spans and feedback (set --token-env)"
    )


def resolve_token(token_env: str | None) -> str | None:
    """Read the bearer token from the env var named in settings (CLI edge only)."""
    if not token_env:
        return None
    token = os.environ.get(token_env)
    if not token:
        raise ConfigError(f"--token-env {token_env}: environment variable is not set or empty")
    return token


def interaction_json(rec: Any) -> dict[str, Any]:
    """The stable JSON shape printed by ``interactions list --json``."""
    data: dict[str, Any] = rec.model_dump(mode="json")
    return data


@click.group()
def interactions() -> None:
    """Browse derived RAG interactions."""


@interactions.command("list")
@store_option
@click.option(
    "--since", type=DURATION, default=None, help="Only traces started in this window, e.g. 1h."
)
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
@click.pass_obj
def list_cmd(
    obj: SettingsSource, store: str | None, since: str | None, limit: int, as_json: bool
) -> None:
    """List interactions, newest first."""
    from ragsieve.collector.derive.sessions import latest_verdicts
    from ragsieve.collector.derive.settle import settling_note
    from ragsieve.collector.timeutil import parse_duration

    lo = datetime.now(UTC) - parse_duration(since) if since else None
    with opened_store(obj, store) as (settings, st):
        rows = st.list_interactions(since=lo, limit=limit + 1)
        more, rows = len(rows) > limit, rows[:limit]
        verdicts = latest_verdicts(st, [r.trace_id for r in rows]) if not as_json else {}
        cfg = settings.collector
        count, last_due = st.settling(quiet_s=cfg.quiet_period_s, max_wait_s=cfg.max_wait_s)
    note = settling_note(
        count, last_due, quiet_s=cfg.quiet_period_s, max_wait_s=cfg.max_wait_s, now=time.time()
    )
    if note:  # on stderr, so --json output stays one record per line
        click.echo(note, err=True)
    if more:  # a listing cut short says so
        click.echo(f"showing the newest {limit}; more match (--limit N, --since 1h)", err=True)
    if as_json:
        for rec in rows:
            click.echo(json.dumps(interaction_json(rec), ensure_ascii=False))
    elif rows:
        click.echo(list_text(rows, verdicts))


def _verdict_text(v: Any) -> str:
    """``not judged``, ``pass`` or ``FLAGGED <root cause>``: the job's latest verdict; where a
    person's label says otherwise, theirs first (``reviewed pass (job FLAGGED)``)."""
    if v is None:
        return "not judged"
    job = f"FLAGGED {v.root_cause or ''}".rstrip() if v.verdict == "fail" else str(v.verdict)
    if v.reviewed is None or v.reviewed == v.verdict:
        return job
    return f"reviewed {v.reviewed} (job {job.split()[0]})"


def list_text(rows: list[Any], verdicts: dict[str, Any]) -> str:
    """``interactions list``: a header, then per trace the job's verdict (``not judged`` until a
    run decides it) and the app's own span status, kept apart so that ``ok`` never reads as a
    pass."""
    lines = [f"{'TRACE ID':<32}  {'VERDICT':<26} {'APP':<6} DOCS  QUESTION -> ANSWER"]
    for rec in rows:
        q, a = clip(rec.query, 60), clip(rec.answer, 40)
        verdict = _verdict_text(verdicts.get(rec.trace_id))
        lines.append(
            f"{rec.trace_id:<32}  {verdict:<26} {rec.status:<6} {len(rec.documents):<4}"
            f"  {q!r} -> {a!r}"
        )
    return "\n".join(lines)


def resolve_trace_id(st: Any, given: str) -> str:
    """The full trace id ``given`` names: itself, or the one stored id it is a prefix of.

    A prefix needs at least 6 hex digits; one that matches several ids is refused with them
    listed (UsageError, exit 2). An id no interaction has is returned as is (the caller says
    there is none).
    """
    tid = given.strip().lower()
    if not TRACE_PREFIX.fullmatch(tid):
        raise click.UsageError(
            f"trace id {given!r}: expected 32 hex digits, or a prefix of at least 6"
        )
    if len(tid) == 32:
        return tid
    rows = st.query(
        "SELECT trace_id FROM interactions WHERE trace_id LIKE ? ORDER BY trace_id LIMIT 11",
        (tid + "%",),
    )
    found = [str(r[0]) for r in rows]
    if len(found) > 1:
        more = "+" if len(found) > 10 else ""
        raise click.UsageError(
            f"trace id prefix {given!r} matches {min(len(found), 10)}{more} traces: "
            + ", ".join(found[:10])
        )
    return found[0] if found else tid


@interactions.command("show")
@click.argument("trace_id", required=False, metavar="[TRACE_ID]")
@click.option(
    "--session",
    "session_id",
    default=None,
    help="Show every turn of this session in order, the flagged ones marked.",
)
@store_option
@json_option
@click.pass_obj
def show_cmd(
    obj: SettingsSource,
    trace_id: str | None,
    session_id: str | None,
    store: str | None,
    as_json: bool,
) -> None:
    """Print one interaction as JSON, or (``--session``) the turns of its conversation.

    TRACE_ID may be a unique prefix of at least 6 hex digits, as ``interactions list`` shows."""
    from ragsieve.collector.derive.sessions import latest_verdicts, session_turns

    if (trace_id is None) == (session_id is None):
        raise click.UsageError("give a TRACE_ID or --session ID")
    with opened_store(obj, store) as (_, st):
        if trace_id is not None:
            rec = st.get_interaction(resolve_trace_id(st, trace_id))
            if rec is None:  # an id the user typed: bad input, like an unknown flag value
                raise click.UsageError(f"no interaction with trace id {trace_id}")
            turns = session_turns(st, rec.session_id) if rec.session_id else []
            click.echo(json.dumps(interaction_json(rec), indent=2, ensure_ascii=False))
            if len(turns) > 1:  # on stderr, so stdout stays the one record
                pos = next(i for i, t in enumerate(turns, 1) if t.trace_id == rec.trace_id)
                click.echo(
                    f"turn {pos} of {len(turns)} in session {rec.session_id}:"
                    f" ragsieve interactions show --session {rec.session_id}",
                    err=True,
                )
            return
        turns = session_turns(st, str(session_id))
        if not turns:
            raise click.UsageError(f"no interaction in session {session_id}")
        rows = session_rows(turns, latest_verdicts(st, [t.trace_id for t in turns]))
    if as_json:
        doc = {"session_id": session_id, "turns": rows, "flagged": sum(r["flagged"] for r in rows)}
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        click.echo(session_text(str(session_id), rows))


def session_rows(turns: list[Any], verdicts: dict[str, Any]) -> list[dict[str, Any]]:
    """One dict per turn of a session: position, ids, question, answer and latest verdict."""
    from ragsieve.collector.derive.sessions import turn_number

    rows = []
    for i, rec in enumerate(turns, start=1):
        v = verdicts.get(rec.trace_id)
        rows.append(
            {
                "turn": i,
                "turn_in_prompt": turn_number(rec),
                "trace_id": rec.trace_id,
                "started_at": rec.started_at.isoformat(),
                "status": rec.status,
                "query": rec.query,
                "retrieval_queries": list(rec.retrieval_queries),
                "answer": rec.answer,
                "verdict": v.verdict if v else None,
                "root_cause": v.root_cause if v else None,
                "flagged": bool(v and v.verdict == "fail"),
                "reviewed": v.reviewed if v else None,
                "verdict_text": _verdict_text(v),
            }
        )
    return rows


def session_text(session_id: str, rows: list[dict[str, Any]]) -> str:
    """The session view people read: one line per turn, a flagged turn marked with ``!``."""
    flagged = sum(r["flagged"] for r in rows)
    lines = [f"session {session_id}: {len(rows)} turn(s), {flagged} flagged"]
    for r in rows:
        mark = "!" if r["flagged"] else " "
        verdict = r["verdict_text"]
        q, a = clip(r["query"], 70), clip(r["answer"], 50)
        lines.append(f"{mark}{r['turn']:>3}  {r['trace_id']}  {verdict:<26} {q!r} -> {a!r}")
        rewrite = [x for x in r["retrieval_queries"] if x != r["query"]]
        if rewrite:
            lines.append(f"{'':>6}retrieval query: {clip(rewrite[0], 90)!r}")
    return "\n".join(lines)
