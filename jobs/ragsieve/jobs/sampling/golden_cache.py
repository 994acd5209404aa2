"""Golden query vectors kept on disk across runs, keyed by the golden file's content hash.

Every ``jobs run`` reads the golden set twice (novelty for the sampler, the reference for golden
growth), and embedding 200,000 queries costs minutes and gigabytes each time. The vectors of
one golden file's queries, in file order, are saved once as ``golden-<sha256>-<encoder>.npy``
(the hash of the file's bytes) and memory-mapped by later runs: a new version (other bytes)
gets its own file, an edited file a new hash, so a stale vector is never read. Where the
folder cannot be written (read-only, full) the run embeds as before and says so in the log; a
damaged cache file is recomputed.

The folder: beside a SQLite store (``<store folder>/.ragsieve-cache``), else the user's cache
(``~/.cache/ragsieve``).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ragsieve.evaluators.tools.embeddings import DIM
from ragsieve.evaluators.tools.files import new_temp_file

log = logging.getLogger(__name__)
ENCODER = f"usem3m-{DIM}"  # the embedded encoder (tools.embeddings); a new one gets new files
Embed = Callable[[Sequence[str]], np.ndarray]


def cache_dir(store_url: str | None) -> Path:
    """Where golden vectors are kept for the store at ``store_url``."""
    if store_url and store_url.startswith("sqlite:///") and ":memory:" not in store_url:
        return Path(store_url.removeprefix("sqlite:///").split("?")[0]).parent / ".ragsieve-cache"
    return Path.home() / ".cache" / "ragsieve"


def file_digest(path: str | Path) -> str:
    """sha256 of a file's bytes (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def golden_vectors(
    path: str | Path, queries: Sequence[str], embed: Embed, folder: Path | None
) -> np.ndarray:
    """Unit vectors of ``queries`` (the golden file's, in file order): read from the cache when
    this exact file was embedded before, else embedded and saved (``folder`` None: no cache)."""
    if folder is None or not queries:
        return embed(queries)
    target = folder / f"golden-{file_digest(path)[:40]}-{ENCODER}.npy"
    try:
        cached = np.load(target, mmap_mode="r")
        if cached.shape == (len(queries), DIM) and cached.dtype == np.float32:
            return cached
        log.warning("golden vector cache %s does not match the file; recomputing", target)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:  # truncated or foreign file
        log.warning("golden vector cache %s unreadable (%s); recomputing", target, exc)
    vectors = np.ascontiguousarray(embed(queries), dtype=np.float32)
    _save(target, vectors)
    return vectors


def _save(target: Path, vectors: np.ndarray) -> None:
    """Write ``vectors`` to ``target`` atomically; a failure only costs the next run's time."""
    tmp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = new_temp_file(target.parent, ".golden-", ".npy.tmp")
        with os.fdopen(fd, "wb") as out:
            np.save(out, vectors)
        os.replace(tmp, target)
    except OSError as exc:
        log.warning("golden vectors not cached in %s: %s", target.parent, exc.strerror or exc)
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


__all__ = ["ENCODER", "cache_dir", "file_digest", "golden_vectors"]
