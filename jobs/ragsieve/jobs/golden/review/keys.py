"""The review's one-letter questions: a single key at a terminal, a line when input is piped.

At a terminal ``[a]ccept ... [q]uit`` acts on the key pressed, without Enter (a stray Enter or
space is ignored; Ctrl-C and Ctrl-D stop the review as before). With input from a pipe or file,
each answer is a line, as scripts and ``printf 'a\\nq\\n' | ragsieve golden review`` expect;
when the lines run out, a yes/no question takes its default and any other question ends the
review (:func:`ended`), every answer already given being saved.
Chunk lists are typed as ``c1, c7=3`` (:func:`parse_chunks`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click


def at_terminal() -> bool:
    """True when the answers come from a person at a terminal (stdin is a TTY)."""
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):  # closed or replaced stdin
        return False


def _key(text: str) -> str:
    """One key press, shown after the question; whitespace-only input reads as ``""``."""
    click.echo(f"{text}: ", nl=False)
    try:
        pressed = click.getchar()
    except EOFError:  # Ctrl-D, or the terminal closed
        click.echo("")
        raise click.Abort() from None
    key = pressed.strip().lower()
    click.echo(key if key.isprintable() else "")
    return key


def ended(exc: click.Abort) -> bool:
    """True when ``exc`` is the end of input (a pipe or file ran out, or Ctrl-D), not Ctrl-C.

    click turns both into :class:`click.Abort`; the ``EOFError`` it was raised from stays its
    context."""
    return isinstance(exc.__context__, EOFError)


def choose(text: str, keys: Sequence[str]) -> str:
    """One of ``keys`` (single letters): a key press at a terminal, else a line."""
    if not at_terminal():
        answer: str = click.prompt(text, type=click.Choice(list(keys)), show_choices=False)
        return answer
    while True:
        key = _key(text)
        if key in keys:
            return key
        if key:
            click.echo(f"  press one of {', '.join(keys)}")


def confirm(text: str, *, default: bool = False) -> bool:
    """A yes/no question: ``y`` or ``n`` at a terminal (Enter takes the default), else a line."""
    if not at_terminal():
        try:
            return click.confirm(text, default=default)
        except click.Abort as exc:
            if not ended(exc):
                raise
            click.echo(f"(end of input: {'yes' if default else 'no'}, the default)")
            return default
    shown = "[Y/n]" if default else "[y/N]"
    while True:
        key = _key(f"{text} {shown}")
        if key in ("y", "n"):
            return key == "y"
        if not key:
            return default
        click.echo("  press y or n")


def parse_chunks(text: str) -> dict[str, int]:
    """``"c1, c7=3"`` → ``{"c1": 1, "c7": 3}`` (grade 1 unless given, 0..3)."""
    out: dict[str, int] = {}
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        cid, sep, grade = part.partition("=")
        if not cid.strip():
            raise click.BadParameter(f"empty chunk id in {part!r}")
        try:
            value = int(grade) if sep else 1
        except ValueError:
            msg = f"grade of {cid.strip()!r} must be 0..3, got {grade!r}"
            raise click.BadParameter(msg) from None
        if not 0 <= value <= 3:
            raise click.BadParameter(f"grade of {cid.strip()!r} must be 0..3, got {value}")
        out[cid.strip()] = value
    return out


def format_chunks(chunks: dict[str, int]) -> str:
    """Inverse of :func:`parse_chunks`."""
    return ", ".join(cid if g == 1 else f"{cid}={g}" for cid, g in chunks.items())


__all__ = ["at_terminal", "choose", "confirm", "ended", "format_chunks", "parse_chunks"]
