"""Alerts on the run history: rules, de-dup and resolve, webhook/Slack sinks through the outbox.

The receiver is a real HTTP server on loopback; the history is simulated through the job's own
estimators (``ragsieve.jobs.run.simulate``) with a known true failure rate.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ragsieve.collector.store import Store
from ragsieve.evaluators.errors import ConfigError
from ragsieve.jobs.alerts.evaluate import evaluate
from ragsieve.jobs.alerts.service import evaluate_after_run
from ragsieve.jobs.cli import cli
from ragsieve.jobs.history.runs import RunRecord
from ragsieve.jobs.run.simulate import HistorySpec, simulate, store_run
from ragsieve.jobs.settings import load_settings
from ragsieve.jobs.settings.alerts import AlertRule


class Receiver:
    """A webhook receiver on 127.0.0.1: records JSON bodies; ``status`` sets its answer."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.status = 200
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if outer.status == 200:
                    outer.bodies.append(json.loads(data))
                    outer.paths.append(self.path)
                self.send_response(outer.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _runs(spec: HistorySpec) -> list[RunRecord]:
    return [RunRecord(r["run_id"], t, t + 30, r) for t, r in simulate(spec)]


def _step(i: int) -> float:
    return 0.04 if i < 200 else 0.12


RISE = AlertRule(kind="failure_rate_rise", baseline="7d", level=0.01, min_effect=0.01)


@pytest.mark.parametrize("seed", range(5))
def test_rise_rule_fires_within_two_runs_of_a_step_and_rarely_on_a_stable_rate(seed: int) -> None:
    runs = _runs(HistorySpec(runs=205, rate=_step, seed=seed))
    fires = [evaluate([RISE], runs[: i + 1])[0].firing for i in range(len(runs))]
    stable = fires[1:200]  # run 0 has no baseline
    false_alarm_rate = sum(stable) / len(stable)
    assert false_alarm_rate <= RISE.level
    first = next(i for i in range(200, 205) if fires[i])
    assert first <= 201, f"fired first at run {first}, step at 200"


def test_false_alarm_rate_of_the_plain_test_is_at_most_its_level() -> None:
    # No minimum effect: the z test alone, at 5%, over 200 stable runs x 5 histories.
    rule = AlertRule(kind="failure_rate_rise", level=0.05, min_effect=0.0)
    alarms = checks = 0
    for seed in range(5):
        runs = _runs(HistorySpec(runs=200, rate=lambda i: 0.04, seed=100 + seed))
        for i in range(1, 200):
            alarms += evaluate([rule], runs[: i + 1])[0].firing
            checks += 1
    assert 0 < alarms / checks <= rule.level  # it does fire by chance, but no more than 5%


def test_above_rule_reads_the_lower_bound_not_the_estimate() -> None:
    runs = _runs(HistorySpec(runs=1, rate=lambda i: 0.04))
    fr = runs[-1].report["failure_rate"]
    just_below = AlertRule(kind="failure_rate_above", value=round(fr["ci_low"] - 0.001, 4))
    at_estimate = AlertRule(kind="failure_rate_above", value=round(fr["estimate"] - 0.001, 4))
    assert evaluate([just_below], runs)[0].firing
    assert not evaluate([at_estimate], runs)[0].firing  # estimate above, interval not wholly


def test_sustained_cell_share_and_new_category_rules() -> None:
    spec = HistorySpec(runs=6, rate=lambda i: 0.04 if i < 3 else 0.2, new_category_at=[4])
    runs = _runs(spec)
    sustained = AlertRule(kind="sustained", value=0.1, runs=3, cell="route=/search")
    fired = [evaluate([sustained], runs[: i + 1])[0].firing for i in range(6)]
    assert fired == [False, False, False, False, False, True]
    share = AlertRule(kind="root_cause_share", root_cause="retrieval", value=0.3, min_cases=5)
    assert evaluate([share], runs)[0].firing
    assert not evaluate([share.model_copy(update={"value": 0.95})], runs)[0].firing
    cat = AlertRule(kind="new_category", min_cases=4)
    assert [f.key for f in evaluate([cat], runs[:5])] == []  # 3 cases at its first run
    assert [f.key for f in evaluate([cat], runs)] == ["new_category:cat_00"]


def _settings(tmp_path: Path, store: Store, receiver: Receiver, **extra: str) -> Any:
    cfg = tmp_path / "ragsieve.toml"
    cfg.write_text(
        f'store = "{store.url}"\n[phoenix]\nbase_url = "http://127.0.0.1:6006"\n'
        f'[alerts]\nwebhook_url = "{receiver.url}/hook"\n'
        f'slack_webhook_url = "{receiver.url}/slack"\nbackoff_s = 0.05\nmax_backoff_s = 0.1\n'
        + "".join(f"{k} = {v}\n" for k, v in extra.items())
        + '[[alerts.rules]]\nkind = "failure_rate_rise"\nlevel = 0.01\nmin_effect = 0.01\n',
        encoding="utf-8",
    )
    return cfg


def test_rise_alert_is_sent_once_while_firing_then_resolved(
    tmp_path: Path, store: Store, receiver: Receiver
) -> None:
    settings = load_settings(_settings(tmp_path, store, receiver))
    rate = lambda i: 0.04 if i < 40 or i >= 46 else 0.16  # noqa: E731
    results, run_ids = [], []
    for started, report in simulate(HistorySpec(runs=60, rate=rate, seed=3)):
        store_run(store, started, report)
        results.append(evaluate_after_run(store, settings, report, now=started + 31))
        run_ids.append(report["run_id"])
    hooks = [b for b, p in zip(receiver.bodies, receiver.paths, strict=True) if p == "/hook"]
    assert [b["status"] for b in hooks] == ["firing", "resolved"]
    fired = next(i for i, r in enumerate(results) if r["events"])
    assert 40 <= fired <= 41
    body = hooks[0]
    assert body["rule"]["kind"] == "failure_rate_rise" and body["alert"] == "failure_rate_rise"
    assert body["values"]["estimate"] > body["values"]["baseline"]
    assert body["interval"][0] <= body["values"]["estimate"] <= body["interval"][1]
    assert body["run_id"] == run_ids[fired] and body["window"]["end"].startswith("2026-01-02")
    assert body["links"]["traces"][0].startswith("http://127.0.0.1:6006/redirects/traces/")
    slack = [b for b, p in zip(receiver.bodies, receiver.paths, strict=True) if p == "/slack"]
    assert len(slack) == 2 and "FIRING" in slack[0]["text"] and "RESOLVED" in slack[1]["text"]


def test_nothing_is_lost_while_the_receiver_is_down(
    tmp_path: Path, store: Store, receiver: Receiver
) -> None:
    settings = load_settings(_settings(tmp_path, store, receiver))
    runs = list(simulate(HistorySpec(runs=45, rate=lambda i: 0.04 if i < 40 else 0.2, seed=1)))
    receiver.status = 503
    for started, report in runs[:42]:
        store_run(store, started, report)
        out = evaluate_after_run(store, settings, report, now=started + 31)
    assert out["firing"] == ["failure_rate_rise"] and receiver.bodies == []
    assert out["delivery"]["alerts_webhook"]["pending"] == 1
    receiver.status = 200
    time.sleep(0.2)  # past the retry backoff (max_backoff_s = 0.1, on the real clock)
    for started, report in runs[42:]:
        store_run(store, started, report)
        evaluate_after_run(store, settings, report, now=started + 3600)  # past any backoff
    assert [(p, b.get("status")) for b, p in zip(receiver.bodies, receiver.paths, strict=True)] == [
        ("/hook", "firing"),
        ("/slack", None),
    ]
    assert store.outbox_stats()["alerts_webhook"] == {"pending": 0, "dead": 0, "delivered": 1}


def test_alerts_cli_test_and_list(tmp_path: Path, store: Store, receiver: Receiver) -> None:
    cfg = _settings(tmp_path, store, receiver)
    runner = CliRunner()
    out = runner.invoke(cli, ["--config", str(cfg), "alerts", "test"])
    assert out.exit_code == 0, out.output
    assert "alerts_webhook: ok" in out.output and receiver.bodies[0]["status"] == "test"
    receiver.status = 500
    out = runner.invoke(cli, ["--config", str(cfg), "alerts", "test"])
    assert out.exit_code == 1 and "alerts_webhook: failed: 500" in out.output
    receiver.status = 200
    settings = load_settings(cfg)
    for started, report in simulate(HistorySpec(runs=42, rate=lambda i: 0.04 if i < 40 else 0.2)):
        store_run(store, started, report)
        evaluate_after_run(store, settings, report, now=started + 31)
    out = runner.invoke(cli, ["--config", str(cfg), "alerts", "list", "--json"])
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.output)["alerts"]
    assert row["status"] == "firing" and "vs baseline" in row["why"]
    text = runner.invoke(cli, ["--config", str(cfg), "alerts", "list"]).output
    assert text.startswith("firing    failure_rate_rise")


def test_a_rule_without_its_value_names_the_line(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[alerts]\n[[alerts.rules]]\nkind = "failure_rate_above"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"needs value"):
        load_settings(cfg)


def test_a_new_category_alert_fires_once_and_resolves_when_covered(
    tmp_path: Path, store: Store, receiver: Receiver
) -> None:
    cfg = tmp_path / "ragsieve.toml"
    cfg.write_text(
        f'[alerts]\nwebhook_url = "{receiver.url}/hook"\n'
        '[[alerts.rules]]\nkind = "new_category"\nmin_cases = 5\n',
        encoding="utf-8",
    )
    settings = load_settings(cfg)
    spec = HistorySpec(runs=12, rate=lambda i: 0.04, new_category_at=[2])
    events = []
    for i, (started, report) in enumerate(simulate(spec)):
        if i >= 9:  # people promoted the category into the golden set: no longer new
            report["golden"]["new_categories"] = []
        store_run(store, started, report)
        events += evaluate_after_run(store, settings, report, now=started + 31)["events"]
    # 3 cases at run 2, 5 at run 4: fires there, stays quiet while it holds, resolves at run 9
    assert events == [
        {"status": "firing", "alert": "new_category:cat_00"},
        {"status": "resolved", "alert": "new_category:cat_00"},
    ]
    fired, resolved = receiver.bodies
    assert fired["values"]["size"] == 5 and fired["values"]["examples"]
    assert resolved["message"].endswith("condition no longer present")


@pytest.mark.postgres
def test_alerts_and_history_on_postgres(pg_store: Any, tmp_path: Path, receiver: Receiver) -> None:
    store: Store = pg_store
    settings = load_settings(_settings(tmp_path, store, receiver))
    for started, report in simulate(HistorySpec(runs=44, rate=lambda i: 0.04 if i < 40 else 0.2)):
        store_run(store, started, report)
        out = evaluate_after_run(store, settings, report, now=started + 31)
    assert out["evaluated"] and out["firing"] == ["failure_rate_rise"]
    hooks = [
        b["status"] for b, p in zip(receiver.bodies, receiver.paths, strict=True) if p == "/hook"
    ]
    assert hooks == ["firing"]


def test_a_corrected_basis_reads_the_judge_corrected_rate() -> None:
    runs = _runs(HistorySpec(runs=60, rate=lambda i: 0.04))  # 20 reviewed flags, 40 audits
    corrected = runs[-1].report["judge_quality"]["corrected_failure_rate"]
    rule = AlertRule(kind="failure_rate_above", value=0.0, basis="corrected")
    (f,) = evaluate([rule], runs)
    assert (
        f.values["estimate"] == corrected["estimate"] != runs[-1].report["failure_rate"]["estimate"]
    )
    assert f.interval == (corrected["ci_low"], corrected["ci_high"])
    with pytest.raises(ValueError, match="whole-traffic rate rules only"):
        AlertRule(kind="failure_rate_above", value=0.1, basis="corrected", cell="route=/chat")
