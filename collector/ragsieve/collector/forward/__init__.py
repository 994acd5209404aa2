"""Forward: received spans and annotations out of the durable outbox to external endpoints.

Takes outbox rows the receivers (and the job's annotation sink) wrote in the store; gives paced
deliveries with backoff to Phoenix or any OTLP/HTTP endpoint, each row marked delivered once
sent, or parked in the outbox with its error when the endpoint refuses it for good. Imports
``wire`` and ``store`` only: never ``receive`` or ``derive``.

Modules: ``forwarder`` (``Forwarder``: the OTLP topic to an OTLP/HTTP endpoint, honouring
``Retry-After``), ``outbox`` (``OutboxWorker``: drain one topic, paced, with backoff),
``outbound`` (every outbound HTTP call, bounded in time and in what it reads back).
"""
