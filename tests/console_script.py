"""Find the installed ``ragsieve`` console script: skip locally when absent, fail under CI."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest


def ragsieve_script() -> Path:
    """The ``ragsieve`` executable beside this interpreter or on PATH.

    Without it a developer checkout skips with a hint; with ``CI`` set the test fails, so a
    broken install can never turn the end-to-end tests into silent skips.
    """
    beside = Path(sys.executable).with_name("ragsieve")
    if beside.exists():
        return beside
    found = shutil.which("ragsieve")
    if found is not None:
        return Path(found)
    message = f"the ragsieve console script is not installed ({beside}; run pip install -e .)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
