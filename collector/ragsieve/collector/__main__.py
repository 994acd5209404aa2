"""``python -m ragsieve.collector`` = ``ragsieve collector serve`` (container entrypoint)."""

from ragsieve.jobs.cli import main

main(["collector", "serve", *__import__("sys").argv[1:]])
