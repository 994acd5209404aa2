"""Ordered, named schema migrations shared by every SQL store.

Each migration runs once, in order, inside a transaction, and is recorded in ``_migrations``.
Never edit a migration that has shipped: append a new one. ``{id}``, ``{blob}`` and ``{real}`` are
replaced per dialect (SQLite / PostgreSQL).
"""

from __future__ import annotations

MIGRATIONS: list[tuple[str, str]] = [
    (
        "001_spans",
        """
        CREATE TABLE spans (
            trace_id TEXT NOT NULL,
            span_id TEXT NOT NULL,
            parent_span_id TEXT,
            name TEXT NOT NULL,
            start_ns BIGINT NOT NULL,
            end_ns BIGINT NOT NULL,
            n_attributes INTEGER NOT NULL,
            body TEXT NOT NULL,
            received_at {real} NOT NULL,
            PRIMARY KEY (trace_id, span_id)
        );
        CREATE INDEX spans_span_id ON spans (span_id);
        CREATE TABLE traces (
            trace_id TEXT PRIMARY KEY,
            first_seen_at {real} NOT NULL,
            last_seen_at {real} NOT NULL,
            span_count INTEGER NOT NULL DEFAULT 0,
            has_root INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL DEFAULT 'open',
            finalized_at {real},
            revision INTEGER NOT NULL DEFAULT 0,
            late_spans INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX traces_open ON traces (state, last_seen_at);
        """,
    ),
    (
        "002_interactions",
        """
        CREATE TABLE interactions (
            trace_id TEXT PRIMARY KEY,
            revision INTEGER NOT NULL,
            seq BIGINT NOT NULL,
            started_at {real} NOT NULL,
            settled_at {real} NOT NULL,
            status TEXT NOT NULL,
            body TEXT NOT NULL
        );
        CREATE INDEX interactions_started ON interactions (started_at);
        CREATE INDEX interactions_seq ON interactions (seq);
        """,
    ),
    (
        "003_feedback_and_logs",
        """
        CREATE TABLE feedback (
            id {id},
            trace_id TEXT,
            span_id TEXT,
            body TEXT NOT NULL,
            created_at {real} NOT NULL
        );
        CREATE INDEX feedback_trace ON feedback (trace_id);
        CREATE INDEX feedback_span ON feedback (span_id);
        CREATE TABLE log_events (
            id {id},
            trace_id TEXT NOT NULL,
            span_id TEXT,
            body TEXT NOT NULL,
            received_at {real} NOT NULL
        );
        CREATE INDEX log_events_trace ON log_events (trace_id);
        """,
    ),
    (
        "004_outbox",
        """
        CREATE TABLE outbox (
            id {id},
            topic TEXT NOT NULL,
            dedup_key TEXT,
            payload {blob} NOT NULL,
            content_type TEXT NOT NULL,
            items INTEGER NOT NULL DEFAULT 1,
            created_at {real} NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at {real} NOT NULL,
            last_error TEXT,
            delivered_at {real}
        );
        CREATE INDEX outbox_due ON outbox (topic, delivered_at, next_attempt_at);
        CREATE UNIQUE INDEX outbox_dedup ON outbox (topic, dedup_key);
        """,
    ),
    (
        "005_jobs",
        """
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            started_at {real} NOT NULL,
            finished_at {real},
            report TEXT
        );
        CREATE TABLE checkpoints (
            trace_id TEXT NOT NULL,
            judge TEXT NOT NULL,
            judge_version TEXT NOT NULL,
            run_id TEXT NOT NULL,
            done_at {real} NOT NULL,
            PRIMARY KEY (trace_id, judge, judge_version)
        );
        CREATE TABLE results (
            trace_id TEXT NOT NULL,
            evaluator TEXT NOT NULL,
            judge_version TEXT NOT NULL,
            run_id TEXT NOT NULL,
            label TEXT NOT NULL,
            score {real},
            flagged INTEGER NOT NULL DEFAULT 0,
            root_cause TEXT,
            created_at {real} NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (trace_id, evaluator, judge_version)
        );
        CREATE INDEX results_created ON results (created_at);
        CREATE TABLE samples (
            run_id TEXT NOT NULL,
            trace_id TEXT NOT NULL,
            stratum TEXT NOT NULL,
            inclusion_p {real} NOT NULL,
            verdict TEXT,
            root_cause TEXT,
            body TEXT NOT NULL,
            PRIMARY KEY (run_id, trace_id)
        );
        CREATE INDEX samples_trace ON samples (trace_id);
        """,
    ),
    (
        "006_candidates",
        """
        CREATE TABLE candidates (
            id TEXT PRIMARY KEY,
            status TEXT NOT NULL,
            category TEXT,
            root_cause TEXT,
            norm_query TEXT NOT NULL,
            seen INTEGER NOT NULL DEFAULT 1,
            created_at {real} NOT NULL,
            updated_at {real} NOT NULL,
            body TEXT NOT NULL
        );
        CREATE INDEX candidates_status ON candidates (status);
        CREATE INDEX candidates_norm ON candidates (norm_query);
        """,
    ),
    (
        "007_budgets",
        """
        CREATE TABLE budgets (
            name TEXT NOT NULL,
            window_start {real} NOT NULL,
            calls_limit BIGINT,
            usd_limit {real},
            calls_spent BIGINT NOT NULL DEFAULT 0,
            usd_spent {real} NOT NULL DEFAULT 0,
            updated_at {real} NOT NULL,
            PRIMARY KEY (name, window_start)
        );
        """,
    ),
    (
        "008_log_event_dedup",
        """
        ALTER TABLE log_events ADD COLUMN dedup TEXT;
        CREATE UNIQUE INDEX log_events_dedup ON log_events (trace_id, dedup);
        """,
    ),
    (
        "009_observed_corpus",
        """
        CREATE TABLE corpus_chunks (
            chunk_id TEXT PRIMARY KEY,
            content TEXT NOT NULL,
            first_seen {real} NOT NULL,
            traces BIGINT NOT NULL DEFAULT 0,
            length BIGINT NOT NULL DEFAULT 0,
            vector {blob}
        );
        CREATE TABLE corpus_terms (
            term TEXT NOT NULL,
            chunk_id TEXT NOT NULL,
            tf INTEGER NOT NULL,
            PRIMARY KEY (term, chunk_id)
        );
        CREATE TABLE corpus_traces (
            trace_id TEXT PRIMARY KEY
        );
        """,
    ),
    (
        "011_history_alerts",
        """
        CREATE INDEX runs_started ON runs (started_at);
        CREATE TABLE alert_state (
            alert_key TEXT PRIMARY KEY,
            rule TEXT NOT NULL,
            status TEXT NOT NULL,
            since {real} NOT NULL,
            updated_at {real} NOT NULL,
            run_id TEXT,
            body TEXT NOT NULL
        );
        CREATE INDEX alert_state_status ON alert_state (status);
        """,
    ),
    (
        "014_categories",
        """
        CREATE TABLE categories (
            id TEXT PRIMARY KEY,
            root_cause TEXT,
            name TEXT,
            announced_at {real},
            updated_at {real} NOT NULL,
            body TEXT NOT NULL
        );
        CREATE TABLE category_events (
            at {real} NOT NULL,
            kind TEXT NOT NULL,
            category TEXT NOT NULL,
            other TEXT NOT NULL,
            members INTEGER NOT NULL,
            body TEXT NOT NULL
        );
        CREATE INDEX category_events_category ON category_events (category);
        """,
    ),
    (
        "012_calibrations_labels",
        """
        CREATE TABLE calibrations (
            id TEXT PRIMARY KEY,
            series BIGINT NOT NULL,
            created_at {real} NOT NULL,
            active INTEGER NOT NULL DEFAULT 0,
            body TEXT NOT NULL
        );
        CREATE TABLE labels (
            id {id},
            trace_id TEXT NOT NULL,
            source TEXT NOT NULL,
            verdict TEXT NOT NULL,
            metric TEXT,
            root_cause TEXT,
            reason TEXT,
            created_at {real} NOT NULL,
            body TEXT NOT NULL
        );
        CREATE INDEX labels_trace ON labels (trace_id);
        """,
    ),
    (
        "010_ingest_span_bytes",
        """
        ALTER TABLE spans ADD COLUMN pb {blob};
        """,
    ),
    (
        "015_interactions_session",
        """
        ALTER TABLE interactions ADD COLUMN session_id TEXT;
        UPDATE interactions SET session_id = {session_of_body};
        CREATE INDEX interactions_session ON interactions (session_id, started_at)
        """,
    ),
    (
        "016_leases_candidate_versions",
        """
        CREATE TABLE leases (
            name TEXT PRIMARY KEY,
            holder TEXT NOT NULL,
            acquired_at {real} NOT NULL,
            expires_at {real} NOT NULL
        );
        ALTER TABLE candidates ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
        """,
    ),
]
