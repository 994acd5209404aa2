"""Sinks: where verdicts go beyond the store.

Takes each fresh decision's judge results and verdict; gives Phoenix span annotations, queued
in the store's durable outbox and delivered with retries. Alert sinks belong here too.

Modules: ``annotations`` (Phoenix span annotations: build, queue, deliver).
"""
