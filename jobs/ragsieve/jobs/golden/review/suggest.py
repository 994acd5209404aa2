"""What a reviewer is offered as a candidate's relevant chunks: what the failure's evidence names.

The job decided each failure from evidence that names chunks: a chunk of the observed corpus
that answers the question but was not retrieved (``missed_chunk``), or the chunks judged
relevant that reached the prompt ("security#2fa reached the prompt; the answer is unfaithful",
"abstained although security#2fa was relevant"). Those are the relevant chunks of the golden
case, so review starts from them instead of from nothing, which would make every such failure
look like a no-answer case. The system's answer is never a suggestion: it is what failed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# the parts of the root-cause evidence (verdicts/rootcause.py) that list relevant chunks
_NAMED = (
    re.compile(r"^(?P<ids>.*?) reached the prompt"),
    re.compile(r"abstained although (?P<ids>.*?) was relevant"),
)
_ID_CHARS = r"[\w#./:@-]"


def evidence_chunks(body: Mapping[str, Any]) -> tuple[dict[str, int], str]:
    """The relevant chunks a candidate's evidence names (grade 1) and where they come from;
    ``({}, "")`` when the evidence names none (e.g. nothing the system saw answers it)."""
    missed = body.get("missed_chunk")
    if missed:
        return {str(missed): 1}, f"the evidence: the retriever missed {missed}, which answers it"
    evidence = str(body.get("evidence") or "")
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
        ids = sorted(found, key=found.__getitem__)
        if ids:
            return dict.fromkeys(
                ids, 1
            ), f"the evidence: {', '.join(ids)} reached the prompt and answers it"
    return {}, ""


__all__ = ["evidence_chunks"]
