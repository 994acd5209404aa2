"""Run the receiver with uvicorn, in the foreground or in a background thread.

uvicorn drops idle keep-alive connections but has no deadline for a request's headers: a client
that opens a socket and trickles half a request line holds it for ever. :func:`uvicorn_config`
adds one (:data:`HEADER_TIMEOUT_S`) by wrapping uvicorn's HTTP/1.1 protocol class; the receiver
itself bounds the time to read a body (:mod:`ragsieve.collector.receive.intake`).

uvicorn's connection cap (``limit_concurrency``, our ``max_connections``) counts every open
socket, so clients that keep reconnecting and sending their headers slowly kept it full: each
left at its deadline and came back, and good requests got 503 (1,100 such clients shut out 133
of 135). The same wrapper makes room instead: past the cap, a new connection closes the one that
has waited longest for a request's headers (slow or idle, never one whose request is being
served), so a request is refused with 503 only when the cap is full of requests in progress.

Limit: a crowd that reconnects faster than a good client's request arrives, and sends nothing
at all, competes with good clients on age alone (the longest waiting goes first); against one
that trickles its headers, good clients are kept and the tricklers go first.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import threading
import time
from collections import OrderedDict
from typing import Any

import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from ragsieve.evaluators.errors import ConfigError

log = logging.getLogger(__name__)

HEADER_TIMEOUT_S = 10.0
KEEP_ALIVE_S = 5
MAX_CONNECTIONS = 1024  # collector.max_connections; each costs a descriptor and ~10 KB


class _Waiting:
    """One server's connections waiting for a request's headers, longest waiting first."""

    def __init__(self) -> None:
        self.order: OrderedDict[Any, None] = OrderedDict()

    @staticmethod
    def of(server_state: Any) -> _Waiting:
        """The registry kept on uvicorn's per-server state (shared by its connections)."""
        waiting: _Waiting | None = getattr(server_state, "ragsieve_waiting", None)
        if waiting is None:
            waiting = _Waiting()
            server_state.ragsieve_waiting = waiting
        return waiting

    def wait(self, conn: Any) -> None:
        """``conn`` starts waiting for headers now (it goes last)."""
        self.order.pop(conn, None)
        self.order[conn] = None

    def gone(self, conn: Any) -> None:
        self.order.pop(conn, None)

    def make_room(self, conn: Any, limit: int) -> None:
        """Close waiting connections until ``conn``'s request fits under ``limit``: first those
        trickling a request's headers (part of them in, the rest late: the slow-loris pattern),
        then those that have sent nothing, longest waiting first in each.

        A client whose request is on its way has sent nothing yet when the next connections
        arrive, so it goes after every trickler. uvicorn answers 503 when, at a request's
        headers, the open connections (its own included) reach the limit. A closed connection
        leaves uvicorn's count at once (:func:`_drop`), not when the loop gets round to its
        ``connection_lost``: a request whose headers arrive in between would otherwise still
        see the cap full.
        """
        excess = len(conn.connections) - (limit - 1)
        if excess <= 0:
            return
        others = [old for old in self.order if old is not conn]
        for old in sorted(others, key=lambda c: not c.trickling):  # stable: oldest first
            if excess <= 0:
                break
            del self.order[old]  # not waiting any more: re-registered when it waits again
            if old.waiting_for_headers():
                excess -= 1
                _drop(old, "waiting for headers, to make room")


def _drop(conn: Any, why: str) -> None:
    """Close ``conn`` and take it out of uvicorn's connection count now."""
    log.debug("closing %s: %s", conn.client, why)
    conn.transport.close()
    conn.connections.discard(conn)


def header_deadline(base: type[asyncio.Protocol], seconds: float) -> type[asyncio.Protocol]:
    """``base`` (a uvicorn HTTP/1.1 protocol) closing connections whose headers are late: the
    deadline runs from the connection's start and the end of each response until the next
    request's headers are complete (uvicorn then starts a new ``cycle``); a request being served
    is never cut. Past the connection cap, a new connection makes room (:class:`_Waiting`)."""

    class HeaderDeadline(base):  # type: ignore[valid-type,misc]
        _deadline: asyncio.TimerHandle | None = None
        _armed_for: object = None
        trickling = False  # part of a request's headers in, the rest not yet

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self._arm()
            if self.limit_concurrency is not None:
                _Waiting.of(self.server_state).make_room(self, self.limit_concurrency)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self.trickling = self.waiting_for_headers()

        def timeout_keep_alive_handler(self) -> None:
            super().timeout_keep_alive_handler()  # uvicorn closes an idle kept-alive connection
            self.connections.discard(self)  # ... and it leaves the count at once

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            _Waiting.of(self.server_state).gone(self)
            super().connection_lost(exc)

        def waiting_for_headers(self) -> bool:
            """Open, with no request begun since it was armed (new, or between requests)."""
            cycle = self.cycle
            done = cycle is None or bool(cycle.response_complete)
            return done and cycle is self._armed_for and not self.transport.is_closing()

        def _arm(self) -> None:
            self._disarm()
            self.trickling = False
            self._armed_for = self.cycle
            self._deadline = self.loop.call_later(seconds, self._expire)
            _Waiting.of(self.server_state).wait(self)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            if self.waiting_for_headers():
                _drop(self, f"request headers not received in {seconds:g} s")

    HeaderDeadline.__name__ = f"HeaderDeadline{base.__name__}"
    return HeaderDeadline


def uvicorn_config(
    app: Any,
    host: str,
    port: int,
    *,
    header_timeout_s: float = HEADER_TIMEOUT_S,
    keep_alive_s: int = KEEP_ALIVE_S,
    max_connections: int = MAX_CONNECTIONS,
    **options: Any,
) -> uvicorn.Config:
    """The uvicorn settings every way of serving the receiver shares (timeouts, quiet logs).

    ``max_connections`` is uvicorn's ``limit_concurrency``. Past it a new connection closes the
    connection waiting longest for a request's headers; when none is waiting (that many
    requests are being served), a new request is answered 503 with ``Connection: close`` at
    once. Idle and slow connections also leave within ``header_timeout_s``.
    """
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=header_deadline(AutoHTTPProtocol, header_timeout_s),
        timeout_keep_alive=keep_alive_s,
        limit_concurrency=max_connections,
        ws="none",  # no WebSocket routes: an upgrade would leave a stale protocol in the count
        log_level="warning",
        access_log=False,
        **options,
    )


def bind_socket(host: str, port: int, *, what: str = "--port") -> socket.socket:
    """A listening-ready TCP socket on ``host:port`` (0 = a free port), bound before anything runs.

    Binding first turns a port in use into one ConfigError line (the CLI exits 2) before the
    server prints or logs anything, instead of uvicorn's log lines after "listening".
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"{what} {port}: {host}:{port} is already in use (another collector?);"
                f" stop it or choose another {what}"
            ) from None
        raise ConfigError(f"{what} {port}: cannot bind {host}:{port}: {exc.strerror}") from None
    sock.set_inheritable(True)
    return sock


class ServerThread:
    """A uvicorn server on a background thread; ``port=0`` picks a free port.

    Example:
        >>> with ServerThread(app, port=0) as server:  # doctest: +SKIP
        ...     print(server.url)
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
        config = uvicorn_config(app, host, port, lifespan="on", **options)
        # uvicorn installs signal handlers only on the main thread, so this thread leaves the
        # host process's handlers alone.
        self.server = uvicorn.Server(config)
        self.host = host
        self.port = port
        self._socket: socket.socket | None = None
        self._thread = threading.Thread(target=self._run, name="ragsieve-http", daemon=True)

    def _run(self) -> None:
        self.server.run(sockets=[self._socket] if self._socket is not None else None)

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:43121``."""
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 20.0) -> ServerThread:
        """Start serving and wait until the socket listens.

        Raises:
            ConfigError: the port is in use (one line, nothing logged).
        """
        self._socket = bind_socket(self.host, self.port)
        self.port = int(self._socket.getsockname()[1])
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"server on {self.host}:{self.port} did not start")
            time.sleep(0.01)
        sockets = self.server.servers[0].sockets if self.server.servers else []
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Ask uvicorn to exit (running the app's shutdown) and join the thread."""
        self.server.should_exit = True
        if self._thread.ident is not None:  # started (a bind failure never starts it)
            self._thread.join(timeout)
        elif self._socket is not None:
            self._socket.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
