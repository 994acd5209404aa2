"""The options and the store handling every ``ragsieve`` command shares.

Commands across the three packages take a store the same way (``--store``, then
``RAGSIEVE_STORE``, then the config file, then ``sqlite:///ragsieve.db``) and print JSON the same
way (``--json``). They are defined once here; the root ``main()`` turns errors into exit codes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

if TYPE_CHECKING:
    from ragsieve.collector.store import SQLStore

F = TypeVar("F", bound=Callable[..., Any])

STORE_HELP = (
    "Store URL (default: RAGSIEVE_STORE, then the config file, then sqlite:///ragsieve.db)."
)


class SettingsSource(Protocol):
    """What a command's ``ctx.obj`` offers: settings with flags applied over env and TOML."""

    def settings(self, **flags: Any) -> Any: ...


def store_option(fn: F) -> F:
    """``--store URL``, passed to the command as ``store``."""
    return click.option("--store", default=None, help=STORE_HELP)(fn)


def json_option(fn: F) -> F:
    """``--json``, passed to the command as ``as_json``."""
    return click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")(fn)


@contextmanager
def opened_store(
    obj: SettingsSource, store: str | None, *, create: bool = False, **flags: Any
) -> Iterator[tuple[Any, SQLStore]]:
    """Load settings with ``--store`` and ``flags`` applied, open the store, close it on exit.

    ``create=False`` (the default, for commands that read) refuses a missing SQLite file rather
    than creating an empty one.
    """
    from ragsieve.collector.store import open_store

    settings = obj.settings(store=store, **flags)
    st = open_store(settings.store, create=create)
    try:
        yield settings, st
    finally:
        st.close()
