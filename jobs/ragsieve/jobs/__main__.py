"""``python -m ragsieve.jobs`` runs the ``ragsieve`` command."""

from ragsieve.jobs.cli import main

main()
