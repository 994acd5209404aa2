"""The project's exception tree, in one place.

```
RagsieveError(Exception)
 ├── ConfigError(RagsieveError, ValueError)   bad settings or input files; the CLI exits 2
 │    ├── ModelFolderError                    not a usable model folder (judges/model)
 │    ├── StoreUnreachable (+ StoreError)     the store URL's server does not answer (postgres)
 │    └── SchemaTooNew (+ StoreError)         a store migrated by a newer ragsieve (store/sql)
 ├── BadPayload(RagsieveError, ValueError)    undecodable or invalid OTLP; the collector answers 400
 │    ├── UnsupportedMediaType                wrong content type or encoding; 415
 │    └── PayloadTooLarge                     over the size limit (decompressed too); 413
 ├── JudgeError(RagsieveError)                a judge could not decide; becomes label="error"
 ├── StoreError(RagsieveError)                the store failed (locked, unreachable, migration)
 │    ├── CandidateConflict                   two people decided one candidate; exit 1
 │    └── WorkerGaveUp                        a worker's database outage outlasted its limit; exit 1
 ├── GateError(RagsieveError)                 the gate could not compare its inputs
 └── MissingExtra(RagsieveError, ImportError) an optional extra is not installed; one line, exit 2
```
The subclasses outside this module live beside the code that raises them.
"""

from __future__ import annotations


class RagsieveError(Exception):
    """Base class for every error ragsieve raises on purpose."""


class ConfigError(RagsieveError, ValueError):
    """Bad configuration or input file.

    The message is one line that names the source, e.g. ``ragsieve.toml:4: jobs.budget_calls:
    must be >= 1 (got 0)`` or ``RAGSIEVE_STORE: unsupported scheme 'mysql'``.
    """


class BadPayload(RagsieveError, ValueError):
    """An OTLP request body that cannot be decoded or is permanently invalid (HTTP 400)."""

    status_code = 400


class UnsupportedMediaType(BadPayload):
    """Content type or content encoding the receiver does not speak (HTTP 415)."""

    status_code = 415


class PayloadTooLarge(BadPayload):
    """Body larger than the limit, before or after decompression (HTTP 413)."""

    status_code = 413


class JudgeError(RagsieveError):
    """A judge could not produce a verdict; callers turn it into ``label="error"``."""


class StoreError(RagsieveError):
    """The store could not complete an operation."""


class GateError(RagsieveError):
    """The regression gate could not compare baseline and candidate."""


class MissingExtra(RagsieveError, ImportError):
    """An optional extra (``postgres``, ``parquet``, ``pandas``, ``phoenix``, ``model``) is missing.

    An ``ImportError``, so ``except ImportError`` around an optional feature still works. The
    message is one line naming what needed it and the install for the way ragsieve was
    installed, e.g. ``parquet export needs: .venv/bin/python -m pip install -e '.[parquet]'
    (no module 'pyarrow')``; :func:`ragsieve.evaluators.tools.extras.missing` builds it.
    """

    def __init__(self, message: str, *, extra: str, name: str | None = None) -> None:
        super().__init__(message, name=name)
        self.extra = extra

    def __str__(self) -> str:
        return str(self.args[0])
