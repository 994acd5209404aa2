"""Values bound to what they belong to: the entity and the kind the context gives a value for.

Takes the context's chunks and a claim; gives the conflicts a person would name. The context is
read in *units* (:mod:`.units`: a clause, a table cell under its row and column, a list item,
each with its heading; a nameless sentence that opens with a pronoun, with the
subject of the nearest sentence before it that names one). A claim's
number is supported only where a unit gives it for the same entity (:mod:`.entity`: not the Pro
plan's limit for the Starter plan) and as the same kind (:mod:`.kind`: not 15 minutes for 15
business days, nor the 30 days of another clause); a table cell where the claim's entity and
attribute meet supports it (:func:`.entity.bound_cell`). Conservative: each conflict needs the
context to give the claim's subject or kind another value; otherwise nothing is said.
"""

from ragsieve.evaluators.judges.offline.binding.cells import CellConflict, find_cell_conflict
from ragsieve.evaluators.judges.offline.binding.entity import Conflict, bound_cell, find_conflict
from ragsieve.evaluators.judges.offline.binding.kind import (
    KindConflict,
    find_attribute_conflict,
    find_clause_conflict,
    find_kind_conflict,
)
from ragsieve.evaluators.judges.offline.binding.rates import find_rate_conflict
from ragsieve.evaluators.judges.offline.binding.units import (
    Unit,
    context_units,
    nothing_price,
    number_kinds,
)

__all__ = [
    "CellConflict",
    "Conflict",
    "KindConflict",
    "Unit",
    "bound_cell",
    "context_units",
    "find_attribute_conflict",
    "find_cell_conflict",
    "find_clause_conflict",
    "find_conflict",
    "find_kind_conflict",
    "find_rate_conflict",
    "nothing_price",
    "number_kinds",
]
