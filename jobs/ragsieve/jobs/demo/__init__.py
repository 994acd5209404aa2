"""The demo: the Tallyfox RAG app with planted failures, the whole loop, and its scorecard.

Takes: the ``[demo]`` settings. Gives: a collector, app traffic, one job pass over every trace
and the planted-failure scorecard (``ragsieve demo``). ``tallyfox/`` is the app itself;
``runner`` drives the loop, ``scorecard`` scores it, ``phoenix`` starts a throwaway Phoenix and
``cli`` is the command.
"""

from __future__ import annotations

from ragsieve.jobs.demo.scorecard import Floors, Scorecard, score
from ragsieve.jobs.demo.tallyfox.app import DemoApp, PlantedRecord, run_traffic
from ragsieve.jobs.demo.tallyfox.failures import ROOT_CAUSE
from ragsieve.jobs.demo.tallyfox.kb import load_kb
from ragsieve.jobs.demo.tallyfox.traffic import Query, generate_traffic

__all__ = [
    "ROOT_CAUSE",
    "DemoApp",
    "Floors",
    "PlantedRecord",
    "Query",
    "Scorecard",
    "generate_traffic",
    "load_kb",
    "run_traffic",
    "score",
]
