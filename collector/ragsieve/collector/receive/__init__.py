"""Receive: OTLP over HTTP and gRPC, and feedback, into the store in group-committed writes.

Takes HTTP requests (``/v1/traces``, ``/v1/logs``, ``/v1/feedback``, ``/readyz``) and gRPC
``Export`` calls, with the ``CollectorSettings`` limits; gives durable span, log and feedback rows
(and outbox rows to forward) in the store, and the OTLP answer for each request: 200 with partial
success, or 400/413/415/429/503 naming the reason. Imports ``wire`` and ``store`` only: never
``derive`` or ``forward``; the three stages meet in the store.

Modules: ``receiver`` (the HTTP side: one object answering every route), ``grpc_receiver`` (the
gRPC services, same semantics mapped to gRPC status codes), ``signals`` (one body to one write
job per signal, shared by both receivers), ``intake`` (reading a body within its length, its
deadlines and the shared byte budget), ``writer`` (group commit: many requests, one
transaction).
"""
