"""Serve: the running collector: the ASGI app and its lifespan, and uvicorn around it.

Takes ``CollectorSettings`` and an open store; gives the OTLP/HTTP app (``app.create_app``) whose
lifespan starts the writer, the gRPC server, the settle loop and the forwarder, and the server
that runs it in the foreground or a background thread with header deadlines (``server``). The
top of the collector: the one place that wires ``receive``, ``derive`` and ``forward`` together.
"""
