"""What a reviewer is offered as a candidate's relevant chunks: what the failure's evidence names.

The job decided each failure from evidence that names chunks: a chunk of the observed corpus
that answers the question but was not retrieved (``missed_chunk``), or the chunks judged
relevant that reached the prompt ("security#2fa reached the prompt; the answer is unfaithful",
"abstained although security#2fa was relevant"). Those are the relevant chunks of the golden
case, so review starts from them instead of from nothing, which would make every such failure
look like a no-answer case. The system's answer is never a suggestion: it is what failed.

A root cause the job left ``undetermined`` pre-fills nothing: its evidence argues both ways (a
chunk in the prompt on the topic, a chunk elsewhere that holds the answer), and offering the
prompt's chunks as relevant would settle it the wrong way before the reviewer reads it. The
review asks the reviewer for the root cause instead (:func:`asks_root_cause`), and that answer
is a labelled root cause ``judges fit`` learns from. A retrieval failure the weighed evidence
decided names the observed chunk that holds the answer, never the prompt's.

Of the chunks the evidence names, only those that hold the subject the question names are
offered (:func:`of_its_subject`): a follow-up ("And for the Basic plan?") is judged with words
carried over from the turn before, so the earlier subject's chunk (the Pro plan's) counts as
relevant too; it answers the earlier question, not this one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ragsieve.evaluators.judges.offline.text.asked import (
    find_term,
    name_keys,
    question_terms,
    replacements,
)
from ragsieve.evaluators.judges.offline.text.terms import TermIndex
from ragsieve.jobs.verdicts.ledger import UNDETERMINED
from ragsieve.jobs.verdicts.rootcause import ROOT_CAUSES

REVIEW_CAUSES = tuple(c for c in ROOT_CAUSES if c != UNDETERMINED)
"""What a reviewer may name: a decision (``undetermined`` is the job's, never an answer)."""

# the parts of the root-cause evidence (verdicts/rootcause.py) that list relevant chunks
_NAMED = (
    re.compile(r"^(?P<ids>.*?) reached the prompt"),
    re.compile(r"abstained although (?P<ids>.*?) was relevant"),
    # the weighed pieces' own lines, when one of them decided (verdicts/gather.py)
    re.compile(r"the answer's words are in (?P<ids>.*?), (?:a chunk|chunks) of the prompt"),
    re.compile(r"^(?P<ids>.*?), in the prompt, is the golden set's relevant chunk"),
)
_ID_CHARS = r"[\w#./:@-]"
_ASKS = ("user", "human")  # the turns that asked
_OBSERVED = re.compile(r"the observed chunk (?P<id>[\w#./:@-]+) (?:holds|answers)")


def evidence_chunks(body: Mapping[str, Any]) -> tuple[dict[str, int], str]:
    """The relevant chunks a candidate's evidence names (grade 1) and where they come from;
    ``({}, "")`` when the evidence names none (e.g. nothing the system saw answers it)."""
    missed = body.get("missed_chunk")
    if missed:
        return {str(missed): 1}, f"the evidence: the retriever missed {missed}, which answers it"
    evidence = str(body.get("evidence") or "")
    cause = _cause(body)
    if cause == UNDETERMINED:
        return {}, ""  # the reviewer decides: the evidence argues both ways
    if cause == "retrieval":
        observed = _OBSERVED.search(evidence)
        if observed:
            cid = observed.group("id")
            return {cid: 1}, f"the evidence: the observed chunk {cid} holds the answer"
        return {}, ""  # the prompt's chunks are what the retriever got wrong
    in_prompt = [
        str(ch.get("id"))
        for ch in body.get("chunks") or []
        if ch.get("id") is not None and ch.get("in_prompt") is not False
    ]
    for pattern in _NAMED:
        m = pattern.search(evidence)
        if not m:
            continue
        named = m.group("ids")
        found = {}
        for cid in in_prompt:
            hit = re.search(rf"(?<!{_ID_CHARS}){re.escape(cid)}(?!{_ID_CHARS})", named)
            if hit:
                found[cid] = hit.start()
        ids = of_its_subject(body, sorted(found, key=found.__getitem__))
        if ids:
            return dict.fromkeys(
                ids, 1
            ), f"the evidence: {', '.join(ids)} reached the prompt and answers it"
    return {}, ""


def of_its_subject(body: Mapping[str, Any], ids: list[str]) -> list[str]:
    """Of the chunks the evidence names, those that hold every name the question asks about.

    The question is the one the turn means: the app's own rewrite of a follow-up when it has
    one, else the turn as typed; words the judges carried over from earlier turns ("And for the
    Basic plan?" read with "cost month pro") named the earlier question's subject, so they never
    choose. Its names are its capitalised words and, in any case, the words it puts in the frame
    where the turn before had other words (:func:`.text.asked.replacements`). A chunk about
    another named subject (the Pro plan's chunk, relevant to the carried words) answers the
    earlier question, not this one. When no chunk holds them all, every named chunk is kept: the
    reviewer decides.
    """
    question = str(body.get("standalone_query") or body.get("query") or "")
    names = name_keys(question)
    words = [w for k, (w, _) in question_terms(question).items() if k in names]
    # and, in any case, the words it puts where the turn before had its own ("and for the basic
    # plan?" after "how much is the pro plan?": basic)
    earlier = [t.get("content") for t in body.get("chat_history") or [] if t.get("role") in _ASKS]
    if earlier:
        swapped = replacements(question, str(earlier[-1]), subjects=True)  # a verb is no subject
        words += [w for w in swapped.values() if w not in words]
    if len(ids) < 2 or not words:
        return ids
    text = {str(ch.get("id")): str(ch.get("content") or "") for ch in body.get("chunks") or []}
    held = [
        cid
        for cid in ids
        if all(find_term(TermIndex([text.get(cid, "")]), w, True).strength for w in words)
    ]
    return held or ids


def _cause(body: Mapping[str, Any]) -> str | None:
    """The root cause the candidate's evidence was written for: its first failure's (``evidence``
    and ``missed_chunk`` are that failure's, the candidate's own question), not the majority of
    the failures merged since, which may read the evidence as another cause; the majority only
    for rows that keep no sources."""
    sources = body.get("sources") or []
    first = sources[0] if sources and isinstance(sources[0], Mapping) else {}
    ids = body.get("source_trace_ids") or []
    if first.get("root_cause") and (not ids or first.get("trace_id") == ids[0]):
        return str(first["root_cause"])
    if body.get("root_cause"):
        return str(body["root_cause"])
    counts = body.get("root_causes") or {}
    return str(max(counts, key=lambda c: (counts[c], c))) if counts else None


def answered_elsewhere(body: Mapping[str, Any]) -> list[str]:
    """The screen's warning for a merged candidate: each other wording merged into it whose best
    answering chunk (as the job found it) is none of the chunks that answer the candidate's own
    question, and is not among its relevant chunks. Such a wording may ask something else; its
    chunk is never pre-filled, the reviewer decides."""
    own = set((body.get("signature") or {}).get("answers") or ()) | set(
        body.get("relevant_chunks") or {}
    )
    out = []
    for item in body.get("asking_index") or ():
        best = list((item.get("signature") or {}).get("answers") or ())[:1]
        if own and best and best[0] not in own:
            out.append(
                f"  uncertain: also asked as {str(item.get('query'))!r}, best answered by"
                f" {best[0]} (not pre-filled): check it asks the same"
            )
    return out


HAS_ANSWER = ("retrieval", "generation", "both", "abstained_wrongly")
"""Root causes that say the question has an answer: such a case is never accepted without the
chunk that holds it (a golden case without chunks is one the system must abstain on)."""


def acceptance_gap(root_cause: str | None, body: Mapping[str, Any]) -> str | None:
    """What a reviewer must give before a candidate can be accepted, or None: a root cause for
    one the job left ``undetermined``, or the chunk that holds the answer for one whose root
    cause (as reviewed) says the question has an answer. The terminal review asks for it; a
    Phoenix pull leaves the candidate open and counts it."""
    if asks_root_cause(root_cause, body):
        return "root_cause"
    cause = (body.get("review") or {}).get("root_cause") or root_cause
    if not body.get("relevant_chunks") and cause in HAS_ANSWER:
        return "chunk"
    return None


def asks_root_cause(root_cause: str | None, body: Mapping[str, Any]) -> bool:
    """True when the review must ask the reviewer for the root cause: the job left it
    ``undetermined`` and no reviewer has named one yet."""
    given = (body.get("review") or {}).get("root_cause")
    return root_cause == UNDETERMINED and not given


def evidence_lines(root_cause: str | None, body: Mapping[str, Any]) -> list[str]:
    """The screen's evidence: for a root cause left ``undetermined`` and not yet answered, the
    two competing lines one under the other (the reviewer's answer decides); else the line."""
    competing = (body.get("metadata") or {}).get("competing") or []
    if asks_root_cause(root_cause, body) and competing:
        head = "  ROOT CAUSE UNDETERMINED: the evidence argues both ways; your answer decides"
        return [head, *(f"    {line}" for line in competing)]
    said = [f"  evidence: {body['evidence']}"] if body.get("evidence") else []
    return said + answered_elsewhere(body)


__all__ = [
    "REVIEW_CAUSES",
    "answered_elsewhere",
    "asks_root_cause",
    "evidence_chunks",
    "evidence_lines",
    "of_its_subject",
]
