"""The derivation steps for one trace: pipeline, generation, context, content and outcome."""

from __future__ import annotations

import json
from typing import Any

from ragsieve.collector.derive.fields import extract as ex
from ragsieve.collector.derive.fields import outcome
from ragsieve.collector.derive.fields.chunks import (
    StageOutput,
    build_stages,
    in_haystack,
    join_scores,
    needle,
    select_context,
)
from ragsieve.collector.derive.fields.identity import identity, trace_identity
from ragsieve.collector.derive.fields.outcome import completeness, latency, status
from ragsieve.collector.derive.fields.record import (
    convention,
    covered,
    finish_reason,
    flat_attributes,
    ttft,
)
from ragsieve.collector.derive.fields.turns import (
    Rewrite,
    judged_question_source,
    last_user_turn,
    prompt_history,
    rewrite_steps,
    variable_history,
)
from ragsieve.collector.derive.trace.attrs import (
    KNOWN_LENGTH_LIMITS,
    as_str,
    cap,
    mapping,
    normalize_ws,
)
from ragsieve.collector.derive.trace.classify import TraceTree
from ragsieve.collector.derive.trace.lookup import NeedleIndex
from ragsieve.collector.derive.trace.scope import (
    pipeline_root,
    pipeline_scope,
)
from ragsieve.collector.wire.spans import LogEvent, SpanRecord
from ragsieve.evaluators.records import (
    Feedback,
    Message,
    Prompt,
    RagInteraction,
    RetrievedDocument,
)


class Assembly:
    """One derivation run; attributes are filled step by step by :meth:`record`."""

    def __init__(
        self,
        tree: TraceTree,
        logs: list[LogEvent],
        feedback: list[Feedback],
        revision: int,
        late_spans: int,
    ) -> None:
        self.tree, self.logs, self.notes = tree, logs, ex.Notes()
        self.feedback, self.revision, self.late_spans = feedback, revision, late_spans
        self.root = tree.root()
        self.top = self.root or tree.tops()[0]
        self.trace_id = str(self.top.trace_id)
        self.scope, self.multi = pipeline_scope(tree)
        self.leaves = [s for s in tree.llm_leaves() if s.span_id in self.scope]
        self.stages: list[StageOutput] = build_stages(tree, self.scope)
        join_scores(self.stages)
        self._rewrite_steps: list[Rewrite] | None = None
        self._leaf_texts: dict[str, str | None] = {}
        self._logs_by_span: dict[str | None, list[int]] = {}  # span id -> positions in logs
        for i, e in enumerate(logs):
            self._logs_by_span.setdefault(e.span_id, []).append(i)

    # --- generation -------------------------------------------------------------------------
    def _chain(self, leaf: SpanRecord) -> list[SpanRecord]:
        chain = [leaf]
        for anc in self.tree.ancestors(leaf):
            if self.tree.role(anc) != "LLM":
                break
            chain.append(anc)
        return chain

    def _logs_for(self, chain: list[SpanRecord]) -> list[LogEvent]:
        """The chain's log events (unattributed ones too when there is one LLM call), in order."""
        found = [i for sid in {s.span_id for s in chain} for i in self._logs_by_span.get(sid, ())]
        if len(self.leaves) == 1:
            found += self._logs_by_span.get(None, ())
        return [self.logs[i] for i in sorted(found)]

    def _prompt(self, leaf: SpanRecord, notes: ex.Notes) -> tuple[Prompt, str | None]:
        chain = self._chain(leaf)
        messages: list[Message] = []
        system = None
        for span in chain:
            messages, system = ex.input_messages(span, self._logs_for(chain), notes)
            if messages or system:
                break
        template, variables, version = ex.template_info(self.tree, leaf, notes)
        prompt = ex.build_prompt(messages, system, template, variables, version)
        hay_parts = [prompt.text or ""] + [
            v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
            for v in (variables or {}).values()
        ]
        hay = normalize_ws("\n\n".join(p for p in hay_parts if p))
        return prompt, hay or None

    def _output(self, leaf: SpanRecord, notes: ex.Notes) -> tuple[str | None, str]:
        chain = self._chain(leaf)
        for span in chain:
            text, source = ex.output_text(span, self._logs_for(chain), notes)
            if text:
                return text, source
        return None, "none"

    def _leaf_text(self, leaf: SpanRecord) -> str | None:
        """A leaf's output text, read once per derivation (choosing the generation and finding
        rewriting steps both ask; notes are the record's only for the generation itself)."""
        if leaf.span_id not in self._leaf_texts:
            self._leaf_texts[leaf.span_id] = self._output(leaf, ex.Notes())[0]
        return self._leaf_texts[leaf.span_id]

    def _choose_generation(self, root_answer: str | None, needles: list[str]) -> SpanRecord | None:
        cands = []
        for leaf in self.leaves:
            out = self._leaf_text(leaf)
            model, _, _ = ex.model_info(self._chain(leaf))
            if out or model:
                cands.append((leaf, out))
        if not cands:
            return None
        ctx_end = max((s.span.end_ns for s in self.stages), default=0)
        norm_answer = normalize_ws(root_answer) if root_answer else ""

        def matches(out: str | None) -> int:
            norm_out = normalize_ws(out) if out else ""
            return int(
                bool(norm_out and norm_answer)
                and (norm_out in norm_answer or norm_answer in norm_out)
            )

        # The answer's match ranks first: only the leaves sharing the best match are ranked on,
        # and the chunks their prompts quote are counted with one index (linear, not L x chunks).
        scored = [(matches(out), leaf) for leaf, out in cands]
        best = max(m for m, _ in scored)
        index = NeedleIndex(needles)

        def rank(leaf: SpanRecord) -> tuple[int, bool, int, int, str]:
            _, hay = self._prompt(leaf, ex.Notes())
            return (
                index.count_in(hay),
                leaf.start_ns >= ctx_end,
                leaf.end_ns or 0,
                leaf.start_ns,
                leaf.span_id,
            )

        return max((leaf for m, leaf in scored if m == best), key=rank)

    # --- context ---------------------------------------------------------------------------
    def _documents(
        self, gen: SpanRecord | None, hay: str | None
    ) -> tuple[tuple[RetrievedDocument, ...], str]:
        chosen, source = select_context(self.stages, gen)
        docs: list[RetrievedDocument] = []
        seen: set[str] = set()
        for stage in chosen:
            for doc in stage.docs:
                if doc.id not in seen:
                    seen.add(doc.id)
                    docs.append(doc.model_copy(update={"in_prompt": in_haystack(doc, hay)}))
        if hay is None or gen is None:
            return tuple(docs), source
        flags = [d.in_prompt for d in docs]
        # Containment wins when the rule-based set disagrees with what the prompt really holds.
        extra = self._contained_elsewhere(seen, hay)
        if (False in flags or not docs) and extra:
            docs += sorted(extra, key=lambda d: hay.find(needle(d.content or "")))
            return tuple(docs), "containment"
        if False in flags and True in flags:
            return tuple(docs), "containment"
        return tuple(docs), source

    def _contained_elsewhere(self, seen: set[str], hay: str) -> list[RetrievedDocument]:
        found: dict[str, RetrievedDocument] = {}
        for stage in reversed(self.stages):  # later stages (rerank) describe a chunk best
            for doc in stage.docs:
                if doc.id not in seen and doc.id not in found and in_haystack(doc, hay):
                    found[doc.id] = doc.model_copy(update={"in_prompt": True})
        return list(found.values())

    # --- the record ----------------------------------------------------------------------
    def _root_answer(self, proot: SpanRecord) -> str | None:
        root_out = ex.first_value(mapping(proot.attributes), ex.OUTPUT_KEYS, self.notes)
        answer = cap(ex.value_text(root_out, ex.ANSWER_KEYS))
        # A pipeline that also returns its rewritten question (Haystack's include_outputs_from)
        # does not answer with it: the answer is then the generation's own output.
        said = normalize_ws(answer) if answer else ""
        if said and any(said == normalize_ws(rw.query) for rw in self._rewrites()):
            return None
        return answer

    def _rewrites(self) -> list[Rewrite]:
        """The LLM calls whose output became a retrieval query (condense / rephrase steps)."""
        if self._rewrite_steps is None:
            asked = [(st.query, st.span.start_ns) for st in self.stages if st.query]
            wanted = {normalize_ws(q) for q, _ in asked}
            calls = []
            for leaf in self.leaves if asked else ():
                out = self._leaf_text(leaf)
                if out and normalize_ws(out) in wanted:
                    prompt, _ = self._prompt(leaf, ex.Notes())
                    variables = prompt.template_variables
                    calls.append((leaf.span_id, out, leaf.end_ns, variables, prompt))
            self._rewrite_steps = rewrite_steps(calls, asked)
        return self._rewrite_steps

    def _turn(self, gen: SpanRecord | None, prompt: Prompt, question: str | None) -> dict[str, Any]:
        """The conversation before this turn and which question the answering call was given."""
        return {
            "chat_history": self._conversation(gen, prompt),
            "judged_question_source": (
                judged_question_source(prompt, question, self._rewrites()) if gen else "unknown"
            ),
        }

    def _conversation(self, gen: SpanRecord | None, prompt: Prompt) -> tuple[Message, ...]:
        """The turns before this one: what the answering call was given (messages, a written
        transcript, a history variable), else what a rewriting step read."""
        chunks = [d.content for st in self.stages for d in st.docs if d.content]
        found = prompt_history(prompt, chunks) or variable_history(prompt.template_variables)
        if found or gen is None:
            return found
        return next((rw.history for rw in self._rewrites() if rw.span_id != gen.span_id), ())

    def _pipeline(self) -> tuple[SpanRecord | None, SpanRecord, str | None]:
        """The generation span, the pipeline's root span and the root's answer."""
        needles = [needle(d.content) for st in self.stages for d in st.docs if d.content]
        first_ctx = self.stages[0].span if self.stages else None
        guess = self.leaves[-1] if self.leaves else first_ctx
        pre_root = pipeline_root(self.tree, self.scope, self.top, guess)
        root_answer = self._root_answer(pre_root)
        gen = self._choose_generation(root_answer, needles)
        proot = pipeline_root(self.tree, self.scope, self.top, gen or first_ctx)
        if proot is not pre_root:
            root_answer = self._root_answer(proot)
        return gen, proot, root_answer

    def record(self) -> RagInteraction:
        """Run every step and build the frozen record."""
        tree = self.tree
        gen, proot, root_answer = self._pipeline()
        prompt, hay = self._prompt(gen, self.notes) if gen else (Prompt(), None)
        documents, context_source = self._documents(gen, hay)
        raw_gen, gen_source = self._output(gen, self.notes) if gen else (None, "none")
        answer, answer_source = (root_answer, "root_output") if root_answer else (None, "none")
        if not root_answer and raw_gen:
            answer, answer_source = raw_gen, gen_source
        question, question_source = self._question(proot, gen, prompt)
        chain = self._chain(gen) if gen else []
        model, request_model, provider = ex.model_info(chain)
        session, user, tags, metadata = identity(tree, proot if proot else self.root)
        errors = outcome.span_errors(tree, self.logs)
        fbs = self._feedback()
        done = completeness(self.root, gen, self.stages)
        return RagInteraction(
            **trace_identity(self.tree, self.top, self.trace_id, self.revision),
            convention=convention(tree, self.logs),
            session_id=session,
            user_id=user,
            tags=tags,
            metadata=metadata,
            attributes=flat_attributes(tree, self.top, metadata, model, provider),
            **self._timing(gen, chain),
            query=cap(question),
            query_source=question_source,
            retrieval_queries=self._retrieval_queries(),
            **self._turn(gen, prompt, question),
            documents=documents,
            stages=tuple(st.record() for st in self.stages),
            context_source=context_source,
            prompt=prompt,
            answer=answer,
            answer_source=answer_source,
            finish_reason=finish_reason(chain),
            model=model,
            request_model=request_model,
            provider=provider,
            tokens=ex.tokens(chain),
            cost_usd=ex.cost(self.leaves),
            llm_call_count=len(self.leaves),
            generation_span_id=gen.span_id if gen else None,
            status=status(errors, tree.spans, done),
            errors=tuple(errors),
            feedback=tuple(fbs),
            feedback_polarity=outcome.feedback_polarity(fbs),
            completeness=done,
            content_missing=question is None and answer is None,
            content_redacted=self.notes.redacted or any(st.redacted for st in self.stages),
            attributes_dropped=any((s.dropped_attributes_count or 0) > 0 for s in tree.spans),
            possibly_truncated=self._truncated([proot, *chain]),
            kind_inferred=tree.inferred,
            multi_pipeline=self.multi,
            late_spans=self.late_spans,
            span_count=len(tree.spans),
        )

    def _timing(self, gen: SpanRecord | None, chain: list[SpanRecord]) -> dict[str, Any]:
        """When it started and ended, and how long each part took."""
        root, spans = self.root, self.tree.spans
        latency_ms, estimate = latency(root, spans)
        ttft_ms, streaming = ttft(chain)
        return {
            "started_at": outcome.to_datetime(min(outcome.starts(spans), default=0)),
            "ended_at": outcome.to_datetime(root.end_ns) if root and root.end_ns else None,
            "latency_ms": latency_ms,
            "latency_is_estimate": estimate,
            "retrieval_latency_ms": covered([st.span for st in self.stages]),
            "generation_latency_ms": gen.duration_ms if gen else None,
            "ttft_ms": ttft_ms,
            "streaming": streaming,
        }

    def _retrieval_queries(self) -> tuple[str, ...]:
        queries = [*self._genai_queries(), *(st.query for st in self.stages)]
        return tuple(dict.fromkeys(q for q in queries if q))

    def _truncated(self, spans: list[SpanRecord]) -> bool:
        """A value cut by a known length limit, in the stages or the spans that made the answer."""
        if self.notes.truncated or any(st.truncated for st in self.stages):
            return True
        return any(
            isinstance(v, str) and len(v) in KNOWN_LENGTH_LIMITS
            for s in spans
            for v in mapping(s.attributes).values()
        )

    # --- field helpers ---------------------------------------------------------------------
    def _question(
        self, proot: SpanRecord, gen: SpanRecord | None, prompt: Prompt
    ) -> tuple[str | None, str]:
        raw = ex.first_value(mapping(proot.attributes), ex.INPUT_KEYS, self.notes)
        if text := ex.value_text(raw, ex.QUESTION_KEYS):
            return text, "root_input"
        if text := last_user_turn(raw):  # a conversation state (LangGraph's messages)
            return text, "root_messages"
        if prompt.template_variables:
            for key in ex.QUESTION_KEYS:
                value = as_str(prompt.template_variables.get(key))
                if value and value != "__REDACTED__":
                    return value, "template_var"
        if queries := self._genai_queries():
            return queries[0], "genai_query"
        for kind, source in (("retrieval", "retriever_input"), ("rerank", "reranker_query")):
            for st in self.stages:
                if st.kind == kind and st.query and st.span.span_id in self.scope:
                    return st.query, source
        users = [m.content for m in prompt.messages if m.role in ("user", "human")]
        if users:
            last = users[-1]
            stuffed = len(last) > 2048 and any(
                needle(d.content) in normalize_ws(last)
                for st in self.stages
                for d in st.docs
                if d.content
            )
            if not stuffed:
                return last, "last_user_message"
        return None, "none"

    def _genai_queries(self) -> list[str]:
        return [st.query for st in self.stages if st.kind == "genai_retrieval" and st.query]

    def _feedback(self) -> list[Feedback]:
        given = [f for f in self.feedback if f.trace_id in (None, self.trace_id)]
        items = given + outcome.inline_feedback(self.tree, self.trace_id)
        return sorted(items, key=lambda f: f.created_at)


__all__ = ["Assembly"]
