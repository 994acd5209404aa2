"""Alerts on run history: rules read the stored run reports, sinks deliver through the outbox.

Takes: the store's ``runs`` (history) and ``[alerts]`` settings. Gives: ``alert_state`` rows
(firing / resolved) and ``alerts_webhook`` / ``alerts_slack`` outbox rows, delivered with
retries; :func:`ragsieve.jobs.alerts.service.evaluate_after_run` is what a job pass calls.
The rules themselves (kinds and parameters) are settings: ``ragsieve.jobs.settings.alerts``.
"""
