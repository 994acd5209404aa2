"""``ragsieve alerts test | list``: try every sink; show which rules fire and why."""

from __future__ import annotations

import asyncio
import json
import time

import click

from ragsieve.collector.cliopts import SettingsSource, json_option, opened_store, store_option


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def alerts() -> None:
    """Alert rules on the run history and their sinks (section [alerts])."""


@alerts.command("test")
@click.pass_obj
def test_command(obj: SettingsSource) -> None:
    """Send a sample payload to every configured sink now (not through the outbox).

    Exit 1 when a sink refuses it or cannot be reached, 2 when no sink is configured.
    """
    from ragsieve.evaluators.errors import ConfigError
    from ragsieve.jobs.alerts import sinks
    from ragsieve.jobs.alerts.state import Event

    settings = obj.settings()
    cfg = settings.alerts
    targets = sinks.topics(cfg)
    if not targets:
        raise ConfigError("alerts: no sink configured; set alerts.webhook_url or slack_webhook_url")
    now = time.time()
    rule = {"label": "ragsieve alerts test", "kind": "test"}
    event = Event("test", "test", rule, "a test alert from ragsieve", {}, None, now, now, None)
    body = sinks.webhook_payload(event, None, {"report": settings.report.url})
    failed = False
    for topic, url in targets.items():
        err = asyncio.run(sinks.send_direct(url, sinks.encode(topic, body), cfg.timeout_s))
        click.echo(f"{topic}: {'ok' if err is None else 'failed: ' + err}")
        failed = failed or err is not None
    if failed:
        raise click.exceptions.Exit(1)


@alerts.command("list")
@store_option
@json_option
@click.pass_obj
def list_command(obj: SettingsSource, store: str | None, as_json: bool) -> None:
    """Every rule with its state after the last run (firing since when, and why)."""
    from ragsieve.jobs.alerts.service import describe
    from ragsieve.jobs.alerts.sinks import SLACK_TOPIC, WEBHOOK_TOPIC
    from ragsieve.jobs.alerts.state import load_states

    with opened_store(obj, store) as (settings, st):
        states = load_states(st)
        outbox = st.outbox_stats()
    rows = describe(settings.alerts.rules, states)
    pending = {t: outbox.get(t, {}) for t in (WEBHOOK_TOPIC, SLACK_TOPIC) if t in outbox}
    if as_json:
        click.echo(json.dumps({"alerts": rows, "outbox": pending}, ensure_ascii=False))
        return
    if not rows:
        click.echo("no alert rules configured ([[alerts.rules]])")
    for r in rows:
        click.echo(f"{r['status']:<9} {r['alert']}  {r['since'] or ''}\n          {r['why']}")
    for topic, counts in pending.items():
        click.echo(
            f"outbox {topic}: {counts.get('pending', 0)} pending, {counts.get('dead', 0)} dead"
        )


__all__ = ["alerts"]
