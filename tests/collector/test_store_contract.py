"""One contract for every store backend: SQLite and a real PostgreSQL behave the same."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ragsieve.collector.derive.sessions import session_turns
from ragsieve.collector.store import Store, open_store
from ragsieve.collector.wire.spans import LogEvent, SpanRecord
from ragsieve.evaluators.records import Feedback, RagInteraction

T0 = 1_700_000_000.0
BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(params=BACKENDS)
def any_store(request: pytest.FixtureRequest) -> Store:
    """The same fresh, migrated store contract on each backend."""
    name = "store" if request.param == "sqlite" else "pg_store"
    store: Store = request.getfixturevalue(name)
    return store


def tid(n: int) -> str:
    return f"{n:032x}"


def sid(n: int) -> str:
    return f"{n:016x}"


def span(
    trace: int,
    n: int,
    *,
    parent: int | None = None,
    end: int = 2_000,
    attrs: dict[str, Any] | None = None,
    name: str = "op",
) -> SpanRecord:
    return SpanRecord(
        trace_id=tid(trace),
        span_id=sid(n),
        parent_span_id=sid(parent) if parent is not None else None,
        name=name,
        start_ns=1_000 + n,
        end_ns=end,
        attributes=attrs or {},
    )


def interaction(trace: int, root: int = 1, *, started: float = T0, query: str = "q") -> Any:
    return RagInteraction(
        trace_id=tid(trace),
        span_id=sid(root),
        started_at=datetime.fromtimestamp(started, UTC),
        query=query,
        answer="a",
    )


# -- spans ------------------------------------------------------------------------------------
def test_duplicate_span_keeps_later_end_then_more_attributes(any_store: Store) -> None:
    first = any_store.write_spans([span(1, 1, attrs={"a": 1})], now=T0)
    assert (first.written, first.duplicates, first.traces) == (1, 0, (tid(1),))

    again = any_store.write_spans([span(1, 1, attrs={"a": 1})], now=T0 + 1)
    assert (again.written, again.duplicates, again.traces) == (0, 1, ())

    fewer = any_store.write_spans([span(1, 1, end=2_000, attrs={})], now=T0 + 2)
    earlier = any_store.write_spans([span(1, 1, end=1_500, attrs={"a": 1, "b": 2})], now=T0 + 2)
    assert fewer.duplicates == earlier.duplicates == 1
    assert any_store.spans_for_trace(tid(1))[0].attributes == {"a": 1}

    richer = any_store.write_spans([span(1, 1, attrs={"a": 1, "b": 2})], now=T0 + 3)
    assert richer.written == 1
    later = any_store.write_spans([span(1, 1, end=3_000, attrs={"c": 3})], now=T0 + 4)
    assert later.written == 1
    [stored] = any_store.spans_for_trace(tid(1))
    assert (stored.end_ns, dict(stored.attributes)) == (3_000, {"c": 3})
    assert any_store.count_spans() == 1


def test_spans_round_trip_in_start_order(any_store: Store) -> None:
    odd = {"x": [1, 2], "y": "ü\u0000"}
    spans = [span(2, 3, parent=1, attrs=odd), span(2, 1), span(2, 2, parent=1)]
    any_store.write_spans(spans, now=T0)
    got = any_store.spans_for_trace(tid(2))
    assert [s.span_id for s in got] == [sid(1), sid(2), sid(3)]
    assert got[2].attributes == {"x": [1, 2], "y": "ü\u0000"}
    assert any_store.spans_for_trace(tid(99)) == []


def test_log_events_join_their_trace(any_store: Store) -> None:
    ev = LogEvent(tid(3), sid(1), "gen_ai.choice", 5, {"k": "v"}, {"content": "hi"})
    res = any_store.write_spans([], log_events=[ev], now=T0)
    assert res.traces == (tid(3),)
    [back] = any_store.log_events_for_trace(tid(3))
    assert (back.event_name, back.time_ns, dict(back.attributes), back.body) == (
        "gen_ai.choice",
        5,
        {"k": "v"},
        {"content": "hi"},
    )
    assert any_store.trace_state(tid(3))["state"] == "open"


# -- trace bookkeeping ------------------------------------------------------------------------
def test_trace_state_revision_and_late_spans(any_store: Store) -> None:
    any_store.write_spans([span(4, 2, parent=1)], now=T0)
    state = any_store.trace_state(tid(4))
    assert state is not None
    assert (state["span_count"], state["has_root"], state["state"]) == (1, 0, "open")
    any_store.write_spans([span(4, 1)], now=T0 + 1)
    state = any_store.trace_state(tid(4))
    got = (state["span_count"], state["has_root"], state["first_seen_at"], state["last_seen_at"])
    assert got == (2, 1, T0, T0 + 1)

    assert any_store.save_interaction(interaction(4), seen_at=T0 + 1, now=T0 + 20)
    state = any_store.trace_state(tid(4))
    assert (state["state"], state["revision"], state["finalized_at"]) == ("finalized", 1, T0 + 20)
    assert any_store.get_interaction(tid(4)).revision == 1

    any_store.write_spans([span(4, 3, parent=1)], now=T0 + 30)  # late, inside the window
    state = any_store.trace_state(tid(4))
    assert (state["state"], state["late_spans"], state["span_count"]) == ("open", 1, 3)
    assert any_store.save_interaction(interaction(4), seen_at=T0 + 30, now=T0 + 40)
    assert any_store.trace_state(tid(4))["revision"] == 2
    assert any_store.get_interaction(tid(4)).revision == 2

    any_store.late_window_s = 5.0  # now a late span is counted but does not reopen
    any_store.write_spans([span(4, 4, parent=1)], now=T0 + 100)
    state = any_store.trace_state(tid(4))
    assert (state["state"], state["late_spans"]) == ("finalized", 2)
    assert any_store.trace_state(tid(98)) is None


def test_due_traces_needs_root_and_quiet_or_max_wait(any_store: Store) -> None:
    any_store.write_spans([span(5, 1)], now=T0)  # root
    any_store.write_spans([span(6, 2, parent=1)], now=T0)  # no root yet
    due = any_store.due_traces(now=T0 + 5, quiet_s=10, max_wait_s=100)
    assert due == []
    due = any_store.due_traces(now=T0 + 10, quiet_s=10, max_wait_s=100)
    assert due == [(tid(5), T0)]
    due = any_store.due_traces(now=T0 + 100, quiet_s=10, max_wait_s=100)
    assert sorted(due) == [(tid(5), T0), (tid(6), T0)]
    assert len(any_store.due_traces(now=T0 + 100, quiet_s=10, max_wait_s=100, limit=1)) == 1
    any_store.mark_finalized(tid(6), seen_at=T0, now=T0 + 100)
    assert any_store.due_traces(now=T0 + 100, quiet_s=10, max_wait_s=100) == [(tid(5), T0)]


def test_save_interaction_skipped_when_spans_arrived_after_seen_at(any_store: Store) -> None:
    any_store.write_spans([span(7, 1)], now=T0)
    [(trace, seen_at)] = any_store.due_traces(now=T0 + 20, quiet_s=10, max_wait_s=100)
    any_store.write_spans([span(7, 2, parent=1)], now=T0 + 21)  # arrives while deriving
    assert any_store.save_interaction(interaction(7), seen_at=seen_at, now=T0 + 22) is False
    assert any_store.get_interaction(trace) is None
    state = any_store.trace_state(trace)
    assert (state["state"], state["revision"]) == ("open", 0)
    any_store.mark_finalized(trace, seen_at=seen_at, now=T0 + 22)  # also a no-op
    assert any_store.trace_state(trace)["state"] == "open"
    assert any_store.save_interaction(interaction(7), seen_at=T0 + 21, now=T0 + 40) is True


# -- feedback ---------------------------------------------------------------------------------
def test_feedback_joins_by_span_id_even_before_the_span(any_store: Store) -> None:
    early = Feedback(span_id=sid(12), label="thumbs_down")
    assert any_store.write_feedback(early) is None
    any_store.write_spans([span(8, 11), span(8, 12, parent=11)], now=T0)
    assert any_store.write_feedback(Feedback(span_id=sid(11), score=1.0)) == tid(8)
    by_trace = Feedback(trace_id=tid(8), comment="x", label="thumbs_up")
    assert any_store.save_interaction(interaction(8, 11), seen_at=T0, now=T0 + 1)
    assert any_store.write_feedback(by_trace) == tid(8)
    assert any_store.trace_state(tid(8))["state"] == "open"  # re-derive with the feedback
    got = any_store.feedback_for_trace(tid(8))
    assert [(f.span_id, f.label, f.score) for f in got] == [
        (sid(12), "thumbs_down", None),
        (sid(11), None, 1.0),
        (None, "thumbs_up", None),
    ]
    assert any_store.feedback_for_trace(tid(9)) == []


# -- interactions -----------------------------------------------------------------------------
def test_list_and_iter_interactions_windows(any_store: Store) -> None:
    for n in range(1, 6):
        any_store.write_spans([span(20 + n, 1)], now=T0)
        assert any_store.save_interaction(
            interaction(20 + n, started=T0 + 60 * n), seen_at=T0, now=T0 + 1
        )
    at = lambda n: datetime.fromtimestamp(T0 + 60 * n, UTC)  # noqa: E731
    newest = any_store.list_interactions()
    assert [r.trace_id for r in newest] == [tid(25), tid(24), tid(23), tid(22), tid(21)]
    window = any_store.list_interactions(since=at(2), until=at(4))
    assert [r.trace_id for r in window] == [tid(23), tid(22)]
    oldest = list(any_store.iter_interactions(since=at(2), limit=2))
    assert [r.trace_id for r in oldest] == [tid(22), tid(23)]
    assert any_store.list_interactions(since=at(6)) == []
    assert len(any_store.list_interactions(until=at(1) + timedelta(seconds=1))) == 1
    assert any_store.get_interaction(tid(23)).started_at == at(3)


def test_a_session_is_its_turns_in_start_order_and_ids_are_not_patterns(any_store: Store) -> None:
    turns = [(31, "s_1%", 3), (32, "s_1%", 1), (33, "s_10", 2), (34, None, 4), (35, "s_1%", 2)]
    for trace, session, minute in turns:
        any_store.write_spans([span(trace, 1)], now=T0)
        rec = interaction(trace, started=T0 + 60 * minute).model_copy(
            update={"session_id": session}
        )
        assert any_store.save_interaction(rec, seen_at=T0, now=T0 + 1)
    assert [r.trace_id for r in session_turns(any_store, "s_1%")] == [tid(32), tid(35), tid(31)]
    assert [r.trace_id for r in session_turns(any_store, "s_10")] == [tid(33)]
    assert session_turns(any_store, "s_1") == []


def test_the_session_migration_fills_in_records_stored_before_it(tmp_path: Any) -> None:
    import sqlite3

    from ragsieve.collector.store.migrations import MIGRATIONS

    path = tmp_path / "old.db"
    rec = interaction(41).model_copy(update={"session_id": "chat-9"})
    with sqlite3.connect(path) as db:  # a store as the release before the migration left it
        db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
        subs = {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "blob": "BLOB", "real": "REAL"}
        for name, ddl in MIGRATIONS:
            if name == "015_interactions_session":
                continue
            db.executescript(ddl.format(**subs))
            db.execute("INSERT INTO _migrations VALUES (?, ?)", (name, T0))
        db.execute(
            "INSERT INTO interactions (trace_id, revision, seq, started_at, settled_at, status,"
            " body) VALUES (?, 1, 1, ?, ?, 'complete', ?)",
            (rec.trace_id, T0, T0, rec.model_dump_json()),
        )
    store = open_store(f"sqlite:///{path}")
    try:
        assert [r.trace_id for r in session_turns(store, "chat-9")] == [tid(41)]
        plan = store.query(
            "EXPLAIN QUERY PLAN SELECT body FROM interactions WHERE session_id = ?"
            " ORDER BY started_at",
            ("chat-9",),
        )
        assert any("interactions_session" in str(row) for row in plan), plan
    finally:
        store.close()


# -- outbox -----------------------------------------------------------------------------------
def test_outbox_enqueue_dedup_due_and_marks(any_store: Store) -> None:
    any_store.enqueue("phoenix", b"v1", "application/json", dedup_key="k", now=T0)
    any_store.enqueue("phoenix", b"v2", "application/json", dedup_key="k", items=3, now=T0)
    any_store.enqueue("phoenix", b"\x00\xff", "application/x-protobuf", now=T0 + 1)
    any_store.enqueue("other", b"o", "text/plain", now=T0)
    assert any_store.due_outbox("phoenix", now=T0 - 1) == []
    due = any_store.due_outbox("phoenix", now=T0 + 5)
    assert [(i.dedup_key, i.payload, i.items, i.attempts) for i in due] == [
        ("k", b"v2", 3, 0),
        (None, b"\x00\xff", 1, 0),
    ]
    any_store.mark_delivered([due[0].id], now=T0 + 6)
    any_store.mark_retry(due[1].id, "HTTP 503", next_attempt_at=T0 + 100)
    assert any_store.due_outbox("phoenix", now=T0 + 99) == []
    [retry] = any_store.due_outbox("phoenix", now=T0 + 100)
    assert (retry.id, retry.attempts) == (due[1].id, 1)
    assert any_store.outbox_stats() == {
        "phoenix": {"pending": 1, "dead": 0, "delivered": 1},
        "other": {"pending": 1, "dead": 0, "delivered": 0},
    }
    any_store.enqueue("phoenix", b"v3", "application/json", dedup_key="k", now=T0 + 200)
    assert [i.payload for i in any_store.due_outbox("phoenix", now=T0 + 200, limit=1)] == [b"v3"]


def test_spans_and_forward_rows_commit_together(any_store: Store) -> None:
    any_store.write_spans(
        [span(30, 1)], forward=[("otlp", b"pb", "application/x-protobuf", 1)], now=T0
    )
    [item] = any_store.due_outbox("otlp", now=T0)
    assert (item.payload, item.items) == (b"pb", 1)


# -- migrations and generic access ------------------------------------------------------------
def test_migrations_are_idempotent(any_store: Store) -> None:
    assert any_store.migrate() == []
    again = open_store(any_store.url)
    try:
        assert again.migrate() == []
        names = [r[0] for r in again.query("SELECT name FROM _migrations ORDER BY name")]
        assert names == sorted(names) and len(names) >= 6
    finally:
        again.close()


def test_execute_and_query_report_rowcounts(any_store: Store) -> None:
    any_store.write_spans([span(40, 1), span(41, 1)], now=T0)
    assert any_store.execute("UPDATE traces SET has_root = ? WHERE has_root = ?", (0, 1)) == 2
    assert any_store.execute("UPDATE traces SET has_root = 1 WHERE trace_id = ?", ("nope",)) == 0
    assert any_store.query("SELECT COUNT(*) FROM traces WHERE has_root = ?", (0,)) == [(2,)]


# -- many writers (SQLite serializes them; Postgres must too) ---------------------------------
def test_concurrent_duplicate_deliveries_store_each_span_once(any_store: Store) -> None:
    rounds, writers = 10, 4
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def deliver() -> None:
        for r in range(rounds):  # every writer delivers the same 5 traces at the same moment
            batch = [
                span(100 + 10 * r + t, n, parent=None if n == 0 else 0, attrs={"n": n})
                for t in range(5)
                for n in range(4)
            ]
            barrier.wait()
            try:
                any_store.write_spans(batch)
            except BaseException as exc:  # surfaced below
                errors.append(exc)

    threads = [threading.Thread(target=deliver) for _ in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert any_store.count_spans() == rounds * 5 * 4
    for r in range(rounds):
        state = any_store.trace_state(tid(100 + 10 * r))
        assert (state["span_count"], state["has_root"]) == (4, 1)


@pytest.mark.postgres
def test_postgres_outbox_claims_are_exclusive_until_the_lease_ends(pg_store: Any) -> None:
    for n in range(4):
        pg_store.enqueue("otlp", f"p{n}".encode(), "application/x-protobuf", now=T0)
    first = pg_store.due_outbox("otlp", now=T0, limit=3)
    second = pg_store.due_outbox("otlp", now=T0, limit=3)
    assert len(first) == 3 and len(second) == 1
    assert not {i.id for i in first} & {i.id for i in second}
    assert pg_store.due_outbox("otlp", now=T0 + 1) == []
    expired = pg_store.due_outbox("otlp", now=T0 + pg_store.outbox_lease_s + 1)
    assert len(expired) == 4


@pytest.mark.postgres
def test_postgres_migrations_race_from_many_processes_safely(pg_database: str) -> None:
    from ragsieve.collector.store.postgres import PostgresStore

    errors: list[BaseException] = []
    applied: list[list[str]] = []

    def open_one() -> None:
        try:
            s = PostgresStore(pg_database, migrate=False)
            try:
                applied.append(s.migrate())
            finally:
                s.close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(len(a) for a in applied)[:3] == [0, 0, 0]
    assert max(len(a) for a in applied) >= 6


@pytest.mark.postgres
def test_postgres_bad_url_is_a_store_error() -> None:
    from ragsieve.collector.store.postgres import PostgresStore
    from ragsieve.evaluators.errors import StoreError

    with pytest.raises(StoreError, match="cannot connect"):
        PostgresStore("postgresql://nobody:secret@127.0.0.1:1/none", connect_timeout_s=1)


def test_prune_outbox_deletes_only_old_delivered_rows(any_store: Any) -> None:
    for i in range(3):
        any_store.enqueue("t", f"p{i}".encode(), "application/x-protobuf", now=T0)
    first, second, _ = any_store.due_outbox("t", now=T0)
    any_store.mark_delivered([first.id], now=T0)
    any_store.mark_delivered([second.id], now=T0 + 500)
    assert any_store.prune_outbox(100, now=T0 + 550) == 1
    assert any_store.outbox_stats()["t"] == {"pending": 1, "dead": 0, "delivered": 1}


@pytest.mark.postgres
def test_postgres_span_write_lock_footprint_does_not_grow_with_traces(pg_store: Any) -> None:
    # The server's lock table is fixed-size and shared: a write that took one lock per trace
    # failed with "out of shared memory" for a request of ~60,000 one-span traces.
    import psycopg

    n_traces = 2_000
    blocker = psycopg.connect(pg_store.url)
    blocker.execute("LOCK TABLE outbox IN EXCLUSIVE MODE")  # the write stalls at its outbox row
    errors: list[BaseException] = []

    def write() -> None:
        try:
            pg_store.write_spans(
                [span(5_000 + n, 1) for n in range(n_traces)],
                forward=[("otlp", b"pb", "application/x-protobuf", n_traces)],
                now=T0,
            )
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        held = None
        for _ in range(300):
            rows = blocker.execute(
                "SELECT a.pid, (SELECT count(*) FROM pg_locks l WHERE l.pid = a.pid)"
                " FROM pg_stat_activity a WHERE a.datname = current_database()"
                " AND a.wait_event_type = 'Lock' AND a.pid <> pg_backend_pid()"
            ).fetchall()
            if rows:
                held = rows[0][1]
                break
            threading.Event().wait(0.05)
    finally:
        blocker.rollback()
        blocker.close()
        writer.join()
    assert held is not None, "the span write never reached the outbox"
    assert held < 50, f"{held} lock-table entries for one write of {n_traces} traces"
    assert errors == []
    assert pg_store.count_spans() == n_traces
    assert pg_store.trace_state(tid(5_000))["span_count"] == 1


@pytest.mark.postgres
def test_postgres_paced_forwarders_never_send_a_row_twice(pg_database: str) -> None:
    # A paced batch outlasts the claim lease: rows must be renewed before sending, so a second
    # forwarder that claims the expired rows never re-sends what the first already sent.
    import asyncio

    from ragsieve.collector.forward.outbox import OutboxWorker, Outcome
    from ragsieve.collector.store.postgres import PostgresStore

    stores = [PostgresStore(pg_database, outbox_lease_s=1.0) for _ in range(2)]
    try:
        for n in range(8):
            stores[0].enqueue("otlp", f"p{n}".encode(), "application/x-protobuf", items=10)
        sent: list[tuple[str, int]] = []

        def sender(name: str) -> Any:
            async def send(item: Any) -> Outcome:
                sent.append((name, item.id))
                return Outcome(delivered=True)

            return send

        async def main() -> None:
            stop = asyncio.Event()
            workers = [
                OutboxWorker(s, "otlp", sender(f"w{i}"), max_items_per_s=25, poll_interval_s=0.05)
                for i, s in enumerate(stores)
            ]  # 0.4 s a row: one claimed batch of 8 rows takes 3.2 s against a 1 s lease
            tasks = [asyncio.create_task(w.run(stop)) for w in workers]
            for _ in range(300):
                stats = await asyncio.to_thread(stores[0].outbox_stats)
                if stats["otlp"]["delivered"] == 8:
                    break
                await asyncio.sleep(0.05)
            stop.set()
            await asyncio.gather(*tasks)

        asyncio.run(main())
        ids = [i for _, i in sent]
        assert sorted(ids) == sorted(set(ids)) and len(ids) == 8, sent
        assert stores[0].outbox_stats()["otlp"] == {"pending": 0, "dead": 0, "delivered": 8}
    finally:
        for s in stores:
            s.close()


def test_query_in_spans_many_slices_and_appends_params(any_store: Any) -> None:
    ids = [f"{i:032x}" for i in range(1, 1201)]
    any_store.write_spans(
        [
            SpanRecord(trace_id=t, span_id="00000000000000a1", parent_span_id=None, name="s")
            for t in ids[::2]
        ],
        now=T0,
    )
    rows = any_store.query_in(
        "SELECT trace_id FROM spans WHERE trace_id IN ({ids}) AND name = ?", ids, ("s",)
    )
    assert sorted(r[0] for r in rows) == ids[::2]
    assert any_store.query_in("SELECT trace_id FROM spans WHERE trace_id IN ({ids})", []) == []
