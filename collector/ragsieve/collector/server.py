"""Run the receiver with uvicorn, in the foreground or in a background thread."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn


class ServerThread:
    """A uvicorn server on a background thread; ``port=0`` picks a free port.

    Example:
        >>> with ServerThread(app, port=0) as server:  # doctest: +SKIP
        ...     print(server.url)
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        config = uvicorn.Config(
            app, host=host, port=port, log_level="warning", lifespan="on", access_log=False
        )
        # uvicorn installs signal handlers only on the main thread, so this thread leaves the
        # host process's handlers alone.
        self.server = uvicorn.Server(config)
        self.host = host
        self.port = port
        self._thread = threading.Thread(target=self.server.run, name="ragsieve-http", daemon=True)

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:43121``."""
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 20.0) -> ServerThread:
        """Start serving and wait until the socket listens."""
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
        self._thread.join(timeout)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
