"""The options and the store handling every ``ragsieve`` command shares.

Commands across the three packages take a store the same way (``--store``, then
``RAGSIEVE_STORE``, then the config file, then ``sqlite:///ragsieve.db``) and print JSON the same
way (``--json``). They are defined once here; the root ``main()`` turns errors into exit codes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar

import click

from ragsieve.evaluators.errors import ConfigError, MissingExtra, RagsieveError

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


class Duration(click.ParamType):
    """A duration as people type it (``90s``, ``15m``, ``2h``, ``7d``), checked when parsed so a
    bad one is refused naming its flag; the command gets the text as typed."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from ragsieve.collector.timeutil import parse_duration

        try:
            parse_duration(str(value))
        except ConfigError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


DURATION = Duration()


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


def clip(text: str | None, width: int) -> str:
    """``text`` on one line in at most ``width`` characters, cut at a word with ``…`` when long.

    Only a word longer than half the width (an id, a URL) is cut inside itself.
    """
    flat = " ".join((text or "").split())
    if len(flat) <= width:
        return flat
    cut = flat[: max(width - 1, 0)]
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


# click >= 8.2 raises this for a group run without a subcommand; its message is the whole help
_NO_ARGS: type[click.UsageError] | tuple[()] = getattr(click.exceptions, "NoArgsIsHelpError", ())


def exit_code_of(exc: BaseException) -> int:
    """The exit code (and, printed on stderr, the one line) for an error a command raised.

    0 success, 1 a failure the user can act on (a run that failed its own checks, a store or
    judge error, Ctrl-C), 2 bad input (config, flags, files) or a missing extra (the line names
    its install). Anything else is a bug and is re-raised with its traceback.
    """
    if isinstance(exc, click.exceptions.Exit):
        return exc.exit_code
    if isinstance(exc, click.UsageError) and isinstance(exc, _NO_ARGS):  # a bare group: its help
        exc.show()
        return exc.exit_code
    if isinstance(exc, click.UsageError):  # and BadParameter: one line, exit 2
        where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        where = _goes_before(exc) or where
        click.echo(f"error: {exc.format_message()}{where}", err=True)
        return exc.exit_code
    if isinstance(exc, click.ClickException):
        exc.show()
        return exc.exit_code
    if isinstance(exc, click.exceptions.Abort | KeyboardInterrupt):
        click.echo("aborted", err=True)
        return 1
    if isinstance(exc, ConfigError | MissingExtra):
        click.echo(f"error: {exc}", err=True)
        return 2
    if isinstance(exc, RagsieveError):
        click.echo(f"error: {exc}", err=True)
        return 1
    raise exc


def _goes_before(exc: click.UsageError) -> str | None:
    """For an option of the root command given after a subcommand (``results show X --config
    F``), where it goes instead; None for any other error. A subcommand's own option of the
    same name (``eval --config KEY=VALUE``) is parsed by it and never gets here."""
    if not isinstance(exc, click.NoSuchOption) or exc.ctx is None:
        return None
    root = exc.ctx.find_root()
    for p in root.command.params:
        if p.is_eager:  # --version, --help: they act alone, before any command
            continue
        if isinstance(p, click.Option) and exc.option_name in (*p.opts, *p.secondary_opts):
            value = "" if p.is_flag else " " + (p.metavar or _metavar(p))
            rest = exc.ctx.command_path.removeprefix(root.command_path).strip()
            given = f"{exc.option_name}{value}"
            return f" ({given} goes before the command: {root.command_path} {given} {rest} ...)"
    return None


def _metavar(p: click.Option) -> str:
    return "FILE" if isinstance(p.type, click.Path) else str(p.name or "value").upper()


def _command_words(prog_name: str, argv: Sequence[str] | None) -> str:
    """``ragsieve workers worker``: the program and the subcommand words of ``argv``."""
    args = list(sys.argv[1:] if argv is None else argv)
    words: list[str] = []
    for arg in args:
        if arg.startswith("-") or len(words) == 2:
            break
        words.append(arg)
    return " ".join([prog_name, *words])


def run_cli(command: click.Command, prog_name: str, argv: Sequence[str] | None = None) -> NoReturn:
    """Run a click command as a console entry point, mapping every error to its exit code.

    An import of an optional extra's module that fails anywhere below (one no :func:`require`
    checked first) becomes the same one line as :class:`MissingExtra`, and exit 2.
    """
    from ragsieve.evaluators.tools.extras import extra_of, missing

    try:
        rv = command.main(args=argv, prog_name=prog_name, standalone_mode=False)
    except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort) as exc:
        sys.exit(exit_code_of(exc))
    except (KeyboardInterrupt, RagsieveError) as exc:
        sys.exit(exit_code_of(exc))
    except ImportError as exc:
        extra = extra_of(exc.name)
        if extra is None:
            raise
        sys.exit(exit_code_of(missing(extra, _command_words(prog_name, argv), exc.name)))
    sys.exit(rv if isinstance(rv, int) else 0)
