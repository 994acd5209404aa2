"""A chat turn as the framework ran it, when its answering call was not handed chat messages.

Chat engines do not always give the answering LLM call the conversation as messages:

- a completion-style model inside a chat engine (LlamaIndex's ``CondensePlusContextChatEngine``
  over an LLM that only completes, as llama.cpp-style local models do) gets the conversation
  written out as ``role: text`` lines, one prompt string;
- a condense-question engine (LlamaIndex's ``CondenseQuestionChatEngine``, a Haystack rephrase
  pipeline) first asks an LLM to rewrite the typed turn into a standalone question, retrieves
  with it and answers it; the answering call sees no history, the rewriting call read it as text.

This module reads those shapes without knowing any framework by name: a **transcript** is text
made of ``role: text`` lines; a **rewrite step** is an LLM call whose output became a retrieval
query; and the **judged question source** says which question the answering call was given —
the app's rewrite, the typed turn, or ``unknown`` when the trace does not show it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ragsieve.collector.derive.trace.attrs import normalize_ws
from ragsieve.evaluators.records import Message, Prompt

JudgedQuestionSource = Literal["rewrite", "typed", "unknown"]

_ROLE_LINE = re.compile(r"^\s*(system|user|human|assistant|ai|bot|model)\s*:[ \t]?(.*)$", re.I)
_ROLE_NAMES = {"human": "user", "ai": "assistant", "bot": "assistant", "model": "assistant"}


def transcript(text: object) -> list[Message] | None:
    """The messages of a conversation written as ``role: text`` lines, or None when ``text`` is
    not one: it must open with a role line and hold a user line. Lines without a role go on the
    message above them; an empty last assistant line (the cue for the model's reply) is dropped."""
    if not isinstance(text, str) or not _ROLE_LINE.match(text.lstrip().split("\n", 1)[0]):
        return None
    messages: list[list[str]] = []
    for line in text.strip().split("\n"):
        m = _ROLE_LINE.match(line)
        if m:
            role = m.group(1).lower()
            messages.append([_ROLE_NAMES.get(role, role), m.group(2)])
        else:
            messages[-1][1] += "\n" + line
    out = [Message(role=role, content=body.strip()) for role, body in messages]
    if out and out[-1].role == "assistant" and not out[-1].content:
        out.pop()
    if not any(m.role == "user" for m in out):
        return None
    return out


def embedded_transcript(text: object) -> list[Message] | None:
    """The longest run of consecutive ``role: text`` lines inside a prompt string (a history
    block a template wrote between other text), when it holds both a user and an assistant
    line; one line per message, so a stray ``Note: ...`` line cannot start one."""
    if not isinstance(text, str):
        return None
    best: list[Message] = []
    run: list[Message] = []
    for line in [*text.split("\n"), ""]:
        m = _ROLE_LINE.match(line)
        if m and m.group(2).strip():
            role = m.group(1).lower()
            run.append(Message(role=_ROLE_NAMES.get(role, role), content=m.group(2).strip()))
            continue
        if len(run) > len(best) and {"user", "assistant"} <= {r.role for r in run}:
            best = run
        run = []
    return best or None


_USER_TYPES = ("human", "user", "HumanMessage")


def last_user_turn(raw: object) -> str | None:
    """The last user message of a pipeline input that is a conversation (a LangGraph
    ``MessagesState``: ``{"messages": [...]}`` of LangChain-serialized or role/content
    messages): the turn the user typed. None for any other input."""
    if not isinstance(raw, str) or not raw.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    messages = value.get("messages") if isinstance(value, dict) else None
    for message in reversed(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict):
            continue
        inner = message.get("data")
        data: dict[str, Any] = inner if isinstance(inner, dict) else message
        kind = message.get("type") or message.get("role") or data.get("type")
        content = data.get("content")
        if kind in _USER_TYPES and isinstance(content, str) and content.strip():
            return content.strip()
    return None


_FIELD_MARKER = re.compile(r"^\[\[ ## (\w+) ## \]\]\s*$", re.M)


def unframe(content: str) -> str:
    """A message's own words when an adapter framed them in field markers (DSPy's
    ``[[ ## question ## ]]`` sections and its "Respond with the corresponding output fields"
    cue, which names the markers in backticks): the sections' values, the cue and empty
    sections dropped. Other text is returned as it is."""
    parts = _FIELD_MARKER.split(content)
    if len(parts) < 3:
        return content
    values = []
    for value in parts[2::2]:
        kept = [p for p in re.split(r"\n\s*\n", value) if "`[[ ##" not in p and p.strip()]
        if kept:
            values.append("\n\n".join(k.strip() for k in kept))
    return "\n\n".join(values) if values else content


def _plain(messages: Sequence[Message]) -> tuple[Message, ...]:
    return tuple(
        m if (text := unframe(m.content)) == m.content else m.model_copy(update={"content": text})
        for m in messages
    )


def _before_last_user(messages: Sequence[Message]) -> tuple[Message, ...]:
    turns = [m for m in messages if m.role != "system"]
    last_user = max((i for i, m in enumerate(turns) if m.role == "user"), default=-1)
    return tuple(turns[:last_user]) if last_user > 0 else ()


def prompt_history(prompt: Prompt, chunks: Sequence[str] = ()) -> tuple[Message, ...]:
    """The conversation before this turn, as the answering call was given it: its messages, or
    the ``role: text`` transcript its one prompt string is or holds (a completion-style call, a
    template's history block). A block whose lines come from a retrieved chunk (a FAQ written as
    a dialogue) is the context, not the conversation."""
    found = _before_last_user(prompt.messages)
    if found:
        return _plain(found)
    texts = [m.content for m in prompt.messages if m.role in ("user", "human")]
    if len(texts) == 1 and (written := transcript(texts[0])):
        return _before_last_user(written)
    block = embedded_transcript(texts[0]) if len(texts) == 1 else None
    if block and not any(m.content in chunk for m in block for chunk in chunks):
        return tuple(block)
    return ()


def variable_history(variables: Mapping[str, Any] | None) -> tuple[Message, ...]:
    """A conversation passed to a prompt template as one variable (``chat_history``,
    ``history``): every message of the first variable that reads as a transcript."""
    for value in (variables or {}).values():
        if written := transcript(value):
            return tuple(written)
    return ()


@dataclass(frozen=True)
class Rewrite:
    """An LLM call that turned the typed turn into the question the retriever was asked."""

    span_id: str
    query: str
    history: tuple[Message, ...]


def rewrite_steps(
    calls: Iterable[tuple[str, str | None, int, Mapping[str, Any] | None, Prompt]],
    retrieval: Iterable[tuple[str, int]],
) -> list[Rewrite]:
    """The calls (span id, output, end time, template variables, prompt) whose output is the
    query of a retrieval that started after the call ended: the app's rewriting steps."""
    asked = [(normalize_ws(q), start) for q, start in retrieval if q and q.strip()]
    found = []
    for span_id, output, end_ns, variables, prompt in calls:
        said = normalize_ws(output or "")
        if said and any(said == q and start >= end_ns for q, start in asked):
            history = variable_history(variables) or prompt_history(prompt)
            found.append(Rewrite(span_id, (output or "").strip(), history))
    return found


def _question_texts(prompt: Prompt) -> list[str]:
    """Where the answering call's question can sit: its template variables' text values (a
    ``query_str`` / ``question``) and its last user message."""
    texts = [v for v in (prompt.template_variables or {}).values() if isinstance(v, str)]
    users = [m.content for m in prompt.messages if m.role in ("user", "human")]
    if users:
        last = transcript(users[-1])
        texts.append(last[-1].content if last else users[-1])
    return [normalize_ws(t) for t in texts if t and t.strip()]


def judged_question_source(
    prompt: Prompt, typed: str | None, rewrites: Sequence[Rewrite]
) -> JudgedQuestionSource:
    """Which question the answering call was given: the app's rewrite (a template variable or
    its last user message is, or quotes, the rewritten question), the typed turn, or
    ``unknown`` when neither shows in what the trace recorded of its prompt."""
    texts = _question_texts(prompt)
    typed_n = normalize_ws(typed or "")
    for rw in rewrites:
        query = normalize_ws(rw.query)
        if query and query != typed_n and any(query == t or query in t for t in texts):
            return "rewrite"
    if typed_n and any(typed_n == t or typed_n in t for t in texts):
        return "typed"
    return "unknown"
