"""``ragsieve demo`` on a store whose run lease another ``jobs run`` holds (issue 47, leftover).

Before: the demo's job pass waited for the lease and, skipped, scored an empty pass: every
planted failure "missed", a scorecard below its floors for a reason it never named.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ragsieve.collector.store import open_store
from ragsieve.evaluators.errors import StoreError
from ragsieve.jobs.cli import cli
from ragsieve.jobs.demo import runner
from ragsieve.jobs.run.lease import Lease


def test_a_demo_whose_job_pass_is_skipped_says_why_instead_of_scoring_nothing(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    store = open_store(url)
    held = Lease(store, holder="cron-host:4242:abc", ttl_s=600)
    assert held.try_acquire()
    monkeypatch.setattr(runner, "LEASE_WAIT_S", 1.0)
    args = ["demo", "--queries", "6", "--json", "--no-wait", "--store", url]
    try:
        with pytest.raises(StoreError) as info:
            CliRunner().invoke(cli, args, catch_exceptions=False)
    finally:
        held.release()
        store.close()
    message = str(info.value)
    assert "demo: the job pass did not run" in message and "cron-host:4242:abc" in message
