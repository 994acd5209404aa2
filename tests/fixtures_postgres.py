"""Postgres fixtures: a real server (initdb, pg_ctl) on loopback, a fresh database per test."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_USER = "postgres"  # the database superuser created by initdb


def find_pg_bin() -> Path | None:
    """Folder holding initdb/pg_ctl/postgres: PATH first, then /usr/lib/postgresql/*/bin."""
    found = shutil.which("initdb")
    candidates = [str(Path(found).resolve().parent)] if found else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for folder in candidates:
        p = Path(folder)
        if all((p / name).exists() for name in ("initdb", "pg_ctl", "postgres")):
            return p
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_account() -> str | None:
    """Postgres refuses to run as root: pick (or create) an unprivileged account to run it as."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "ragsieve-pg"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    useradd = shutil.which("useradd")
    if useradd is None:
        pytest.skip("running as root and no unprivileged account for PostgreSQL (no useradd)")
    subprocess.run(
        [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "ragsieve-pg"],
        check=True,
        capture_output=True,
    )
    return "ragsieve-pg"


class PostgresServer:
    """A throwaway PostgreSQL cluster in a temporary folder."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.account = _server_account()
        self.root = Path(tempfile.mkdtemp(prefix="ragsieve-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        if self.account is not None:
            ent = pwd.getpwnam(self.account)
            os.chown(self.root, ent.pw_uid, ent.pw_gid)
        self.root.chmod(0o755)

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self.account is not None:
            runuser = shutil.which("runuser") or shutil.which("su")
            if runuser is None:
                pytest.skip("running as root without runuser/su to start PostgreSQL")
            cmd = (
                [runuser, "-u", self.account, "--", *cmd]
                if runuser.endswith("runuser")
                else [runuser, self.account, "-s", "/bin/sh", "-c", " ".join(cmd)]
            )
        return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)

    def start(self) -> PostgresServer:
        """initdb (trust auth, no fsync) and start on 127.0.0.1:port."""
        res = self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            PG_USER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        if res.returncode != 0:
            raise RuntimeError(f"initdb failed: {res.stderr.strip()}")
        opts = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root}"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            " -c max_connections=200 -c shared_buffers=32MB"
        )
        res = self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "log"),
            "-o",
            opts,
            "-w",
            "-t",
            "60",
            "start",
        )
        if res.returncode != 0:
            log = (self.root / "log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"pg_ctl start failed: {res.stderr.strip()} {log}")
        return self

    @property
    def url(self) -> str:
        """URL of the maintenance database ``postgres``."""
        return self.url_for("postgres")

    def url_for(self, database: str) -> str:
        """URL of one database on this server."""
        return f"postgresql://{PG_USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, prefix: str = "t") -> str:
        """A new empty database; returns its URL."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url_for(name)

    def stop(self) -> None:
        """Stop the server and delete its folder."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL for the whole session (skips when the binaries are missing)."""
    bindir = find_pg_bin()
    if bindir is None:
        pytest.skip("no PostgreSQL binaries (initdb, pg_ctl) found; tests/run installs them")
    pytest.importorskip("psycopg", reason="needs psycopg: pip install 'ragsieve[postgres]'")
    server = PostgresServer(bindir).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """URL of the session server's maintenance database."""
    return postgres_server.url


@pytest.fixture
def pg_database(postgres_server: PostgresServer) -> str:
    """URL of a fresh, empty database for this test."""
    return postgres_server.create_database()


@pytest.fixture
def pg_store(pg_database: str) -> Iterator[object]:
    """A migrated PostgresStore on a fresh database, closed at teardown."""
    from ragsieve.collector.store import open_store

    store = open_store(pg_database)
    try:
        yield store
    finally:
        store.close()


__all__ = [
    "PostgresServer",
    "find_pg_bin",
    "pg_database",
    "pg_store",
    "postgres_server",
    "postgres_url",
]
