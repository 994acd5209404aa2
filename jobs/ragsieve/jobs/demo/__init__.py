"""The demo: a bilingual RAG app with planted failures, its traffic, and the detection scorecard."""

from __future__ import annotations

from ragsieve.jobs.demo.app import DemoApp, PlantedRecord, run_traffic
from ragsieve.jobs.demo.failures import ROOT_CAUSE
from ragsieve.jobs.demo.kb import load_kb
from ragsieve.jobs.demo.scorecard import Floors, Scorecard, score
from ragsieve.jobs.demo.traffic import Query, generate_traffic

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
