"""Golden-set files: load and validate line by line, version, write safely, keep a changelog.

A golden set is JSONL, one :class:`~ragsieve.evaluators.records.GoldenCase` per line. Versioned
files are named ``<stem>_v<N>.jsonl``; every version of a set shares one changelog named
``<stem>.CHANGELOG.md`` in the same folder (``golden_v3.jsonl`` → ``golden.CHANGELOG.md``).
BEIR-style ``queries.jsonl`` + ``qrels.tsv`` pairs load into the same shape.

A case from a follow-up turn also keeps its conversation: ``chat_history`` (the earlier user and
assistant turns, ``[{"role", "content"}]``, oldest first) and ``standalone_query`` (what the turn
means on its own: the app's rewrite, reviewed). ``ragsieve eval`` gives the history to a
retriever that takes a ``history`` argument, and the standalone question to one that does not.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.records import GoldenCase, utcnow
from ragsieve.evaluators.tools.files import new_temp_file
from ragsieve.evaluators.tools.jsonlines import json_lines
from ragsieve.evaluators.tools.userfile import MAX_DATA_BYTES, read_text_capped, regular_file

M = TypeVar("M", bound=BaseModel)

_VERSION = re.compile(r"^(?P<stem>.*?)_v(?P<n>\d+)$")


@dataclass(frozen=True)
class GoldenSet:
    """A loaded golden set: where it came from, its version and its cases in file order."""

    path: Path
    version: int | None
    cases: list[GoldenCase]

    @property
    def answerable(self) -> list[GoldenCase]:
        """Cases with at least one relevant chunk (scored by the retrieval metrics)."""
        return [c for c in self.cases if not c.is_no_answer]

    @property
    def no_answer(self) -> list[GoldenCase]:
        """Cases with no relevant chunk: the system should abstain."""
        return [c for c in self.cases if c.is_no_answer]


def parse_version(path: str | Path) -> int | None:
    """``golden_v3.jsonl`` → 3; ``golden.jsonl`` → None."""
    m = _VERSION.match(Path(path).stem)
    return int(m.group("n")) if m else None


def _base_stem(path: Path) -> str:
    m = _VERSION.match(path.stem)
    return m.group("stem") if m else path.stem


def next_version_path(path: str | Path) -> Path:
    """The path of the next version: ``golden_v3.jsonl`` → ``golden_v4.jsonl``.

    An unversioned file counts as version 1, so ``golden.jsonl`` → ``golden_v2.jsonl``; version 0
    is a version (``golden_v0.jsonl`` → ``golden_v1.jsonl``).
    """
    p = Path(path)
    version = parse_version(p)
    version = 1 if version is None else version
    return p.with_name(f"{_base_stem(p)}_v{version + 1}{p.suffix or '.jsonl'}")


def changelog_path(golden_path: str | Path) -> Path:
    """The changelog shared by all versions of a set: ``<stem>.CHANGELOG.md`` next to it."""
    p = Path(golden_path)
    return p.with_name(f"{_base_stem(p)}.CHANGELOG.md")


def read_changelog(golden_path: str | Path) -> str:
    """The set's changelog text ("" when there is none); a FIFO or a device in its place is
    refused (``path: cannot read: is a FIFO``), never opened."""
    log = changelog_path(golden_path)
    if not log.exists():
        return ""
    return read_text_capped(log, MAX_DATA_BYTES, what="a golden set's changelog")


def first_error(exc: ValidationError, default: str = "line") -> tuple[str, str]:
    """``(dotted field, message)`` of a pydantic error's first entry, for one-line messages."""
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err["loc"]) or default
    return loc, str(err["msg"]).removeprefix("Value error, ")


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    return json_lines(path)


def read_jsonl_objects(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line; errors name ``path:line``."""
    p = Path(path)
    for lineno, obj in _json_lines(p):
        if not isinstance(obj, dict):
            raise ConfigError(f"{p}:{lineno}: line: expected a JSON object")
        yield lineno, obj


def load_models(path: str | Path, model: type[M]) -> list[tuple[int, M]]:
    """Validate every line of a JSONL file as ``model``; ids must be unique.

    Raises:
        ConfigError: ``path:line: field: message`` for the first bad line.
    """
    p = Path(path)
    rows: list[tuple[int, M]] = []
    seen: dict[str, int] = {}
    for lineno, obj in read_jsonl_objects(p):
        try:
            row = model.model_validate(obj)
        except ValidationError as exc:
            field, msg = first_error(exc)
            raise ConfigError(f"{p}:{lineno}: {field}: {msg}") from None
        row_id = str(getattr(row, "id", ""))
        if row_id in seen:
            raise ConfigError(
                f"{p}:{lineno}: id: duplicate {row_id!r} (first on line {seen[row_id]})"
            )
        seen[row_id] = lineno
        rows.append((lineno, row))
    return rows


def load_golden(path: str | Path) -> GoldenSet:
    """Load and validate a golden JSONL; the first bad line raises ``path:line: field: message``."""
    p = regular_file(path)  # /dev/zero or a FIFO named, not read for ever
    cases = [case for _, case in load_models(p, GoldenCase)]
    return GoldenSet(path=p, version=parse_version(p), cases=cases)


def load_beir(queries_path: str | Path, qrels_path: str | Path) -> GoldenSet:
    """Build a golden set from BEIR ``queries.jsonl`` ({"id","text"}) and ``qrels.tsv``.

    The qrels file is ``query-id<TAB>corpus-id<TAB>score`` with an optional header line. Queries
    without any qrels line become no-answer cases; qrels for unknown queries are an error.
    """
    qp, rp = Path(queries_path), Path(qrels_path)
    grades: dict[str, dict[str, int]] = {}
    lines = read_text_capped(rp, MAX_DATA_BYTES, what="a qrels file").splitlines()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) == 4:  # TREC style: qid 0 docid grade
            parts = [parts[0], parts[2], parts[3]]
        if len(parts) != 3:
            raise ConfigError(f"{rp}:{lineno}: line: expected query-id, corpus-id, score")
        try:
            grade = int(parts[2])
        except ValueError:
            if lineno == 1:
                continue  # header
            raise ConfigError(f"{rp}:{lineno}: score: not an integer: {parts[2]!r}") from None
        grades.setdefault(parts[0], {})[parts[1]] = grade
    cases: list[GoldenCase] = []
    for lineno, obj in read_jsonl_objects(qp):
        qid, text = obj.get("id", obj.get("_id")), obj.get("text", obj.get("query"))
        if not isinstance(qid, str | int) or isinstance(qid, bool):
            raise ConfigError(f"{qp}:{lineno}: id: missing or not a string")
        if not isinstance(text, str):
            raise ConfigError(f"{qp}:{lineno}: text: missing or not a string")
        answers = obj.get("answers")
        reference = answers[0] if isinstance(answers, list) and answers else None
        try:
            case = GoldenCase(
                id=str(qid),
                query=text,
                relevant_chunks=grades.pop(str(qid), {}),
                reference_answer=reference,
            )
            cases.append(case)
        except ValidationError as exc:
            field, msg = first_error(exc)
            raise ConfigError(f"{qp}:{lineno}: {field}: {msg}") from None
    if grades:
        unknown = ", ".join(sorted(grades)[:5])
        raise ConfigError(f"{rp}: query-id: {len(grades)} ids not in {qp.name}: {unknown}")
    return GoldenSet(path=qp, version=None, cases=cases)


def dump_case(case: GoldenCase) -> str:
    """One JSONL line (canonical field names, no trailing newline; no ``role`` until split, no
    ``chat_history`` / ``standalone_query`` on a single-turn case)."""
    unset = {"role": case.role is None, "chat_history": not case.chat_history}
    unset["standalone_query"] = case.standalone_query is None
    data = case.model_dump(mode="json", exclude={k for k, v in unset.items() if v} or None)
    return json.dumps(data, ensure_ascii=False, sort_keys=False)


def write_golden(path: str | Path, cases: Iterable[GoldenCase], *, overwrite: bool = False) -> Path:
    """Write cases as JSONL atomically; refuses to replace an existing file unless ``overwrite``."""
    p = Path(path)
    if p.exists() and not overwrite:
        raise ConfigError(
            f"{p}: exists; golden files are immutable, write {next_version_path(p).name}"
        )
    fd, tmp = new_temp_file(p.parent, prefix=f".{p.name}.")  # the umask applies, not 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for case in cases:
                out.write(dump_case(case) + "\n")
        if overwrite:
            os.replace(tmp, p)
        else:
            try:
                os.link(tmp, p)  # atomic create: fails if someone wrote p meanwhile
            except FileExistsError:
                raise ConfigError(f"{p}: exists; golden files are immutable") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return p


def append_changelog(golden_path: str | Path, entry: str, *, now: datetime | None = None) -> Path:
    """Append a dated entry for ``golden_path`` to ``<stem>.CHANGELOG.md``; returns its path."""
    if not entry.strip():
        raise ConfigError("changelog entry: must not be empty")
    p = Path(golden_path)
    log = changelog_path(p)
    stamp = (now or utcnow()).strftime("%Y-%m-%d %H:%M UTC")
    header = "" if log.exists() and regular_file(log) else f"# Changelog of {_base_stem(p)}\n"
    with log.open("a", encoding="utf-8") as out:
        out.write(f"{header}\n## {p.name} ({stamp})\n\n{entry.strip()}\n")
    return log
