"""What every ``ragsieve golden`` command opens: settings, store, candidates, category summaries.

Its own module so that the command modules (``cli``, ``promote_cli``) import it and not each
other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragsieve.jobs.golden.growth.repo import STATUSES, CandidateRepo

if TYPE_CHECKING:
    from ragsieve.collector.cliopts import SettingsSource


class GoldenContext:
    """Settings, store, repository and category summaries for one command.

    Use it as ``with GoldenContext(obj, store) as ctx:``: the store opens here and closes on exit,
    whatever the command does.
    """

    def __init__(self, obj: SettingsSource, store: str | None, **flags: Any) -> None:
        from ragsieve.collector.store import open_store

        self.settings = obj.settings(store=store, **flags)
        self.store = open_store(self.settings.store, create=False)
        self.repo = CandidateRepo(self.store)
        self._summaries: dict[str, Any] | None = None

    def __enter__(self) -> GoldenContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def summaries(self) -> dict[str, Any]:
        if self._summaries is None:
            from ragsieve.evaluators.tools.embeddings import embed
            from ragsieve.jobs.golden.growth.categories import summarize
            from ragsieve.jobs.golden.growth.category_log import CategoryLog
            from ragsieve.jobs.golden.growth.reference import load_reference

            cfg = self.settings.golden
            ref = load_reference(self.repo, cfg.path, embed)
            # a merged duplicate's failures are counted in the row it was merged into
            rows = self.repo.select([s for s in STATUSES if s not in ("golden", "merged")])
            log = CategoryLog(self.store)
            names = log.names()
            items = summarize(
                rows,
                ref,
                new_threshold=cfg.new_category_cosine,
                min_cases=cfg.new_category_min_cases,
                recorded=names,
                announced=log.announced(),
            )
            for s in items:  # a name changes in a run, which logs it, not under a reviewer's feet
                s.terms = names.get(s.id) or s.terms
            self._summaries = {s.id: s for s in items}
        return self._summaries

    def close(self) -> None:
        self.store.close()


__all__ = ["GoldenContext"]
