"""The derivation steps for one trace: pipeline, generation, context, content and outcome."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from ragsieve.collector import extract as ex
from ragsieve.collector import outcome
from ragsieve.collector.attrs import (
    KNOWN_LENGTH_LIMITS,
    as_bool,
    as_float,
    as_str,
    cap,
    mapping,
    normalize_ws,
    parse_object,
)
from ragsieve.collector.chunks import (
    StageOutput,
    build_stages,
    in_haystack,
    join_scores,
    needle,
    select_context,
)
from ragsieve.collector.classify import CONTEXT_ROLES, PIPELINE_ROLES, TraceTree, parent_of
from ragsieve.collector.genai import event_name, event_time
from ragsieve.collector.spans import LogEvent, SpanRecord
from ragsieve.evaluators.records import (
    Completeness,
    Convention,
    Feedback,
    Message,
    Prompt,
    RagInteraction,
    RetrievedDocument,
    Status,
)

FIRST_TOKEN_EVENT = "First Token Stream Event"
MAX_ATTRIBUTE_KEYS = 64
SAMPLING_KEYS = ("rag.sampling.baseline_percentage", "rag.sampling.config", "tailsampling.policy")
MAX_PIPELINES = 5
AGENTIC_ROLES = frozenset({"AGENT", "TOOL"})
OI_PREFIXES = ("openinference.", "llm.", "retrieval.", "reranker.", "input.value")


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

    # --- pipeline scope -------------------------------------------------------------------
    def _units(self) -> list[SpanRecord]:
        """Lowest spans whose subtree holds both a context stage and an LLM call."""
        leaves = {s.span_id for s in self.tree.llm_leaves()}
        flags: dict[str, set[str]] = {}
        for span in self.tree.spans:
            mark = (
                "ctx"
                if self.tree.role(span) in CONTEXT_ROLES
                else "llm"
                if span.span_id in leaves
                else None
            )
            if mark:
                for node in [span, *self.tree.ancestors(span)]:
                    flags.setdefault(node.span_id, set()).add(mark)
        full = {sid for sid, f in flags.items() if f == {"ctx", "llm"}}
        return [
            s
            for s in self.tree.spans
            if s.span_id in full and not any(c.span_id in full for c in self.tree.descendants(s))
        ]

    def _subtree(self, span: SpanRecord) -> set[str]:
        return {span.span_id} | {d.span_id for d in self.tree.descendants(span)}

    def _scope(self) -> tuple[set[str], bool]:
        """Spans of the main pipeline, and whether the trace holds several independent ones.

        Independent pipelines are several true roots with an LLM call (a reused trace id), or
        more than ``MAX_PIPELINES`` retrieve+generate units outside any agent/tool (a batch).
        Orphans are fragments of one pipeline whose parents were lost, not pipelines.
        """
        tree = self.tree
        roots = [t for t in tree.tops() if parent_of(t) is None or t.parent_is_remote]
        with_llm = [
            t for t in roots if any(tree.role(d) == "LLM" for d in [t, *tree.descendants(t)])
        ]
        if len(with_llm) > 1:
            return self._subtree(with_llm[0]), True
        units = [
            u
            for u in self._units()
            if not any(tree.role(a) in AGENTIC_ROLES for a in [u, *tree.ancestors(u)])
        ]
        if len(units) <= MAX_PIPELINES:
            return {s.span_id for s in tree.spans}, False
        main = units[0]
        others = {u.span_id for u in units[1:]}
        cur = main
        for anc in self.tree.ancestors(main):
            below = {d.span_id for d in self.tree.descendants(anc)} | {anc.span_id}
            if below & others:
                break
            cur = anc
        return self._subtree(cur), True

    def _pipeline_root(self, anchor: SpanRecord | None) -> SpanRecord:
        if anchor is None:
            return self.top
        chain = [anchor, *self.tree.ancestors(anchor)]
        roles = [
            s for s in chain if self.tree.role(s) in PIPELINE_ROLES and s.span_id in self.scope
        ]
        return (
            roles[-1]
            if roles
            else next((s for s in reversed(chain) if s.span_id in self.scope), self.top)
        )

    # --- generation -------------------------------------------------------------------------
    def _chain(self, leaf: SpanRecord) -> list[SpanRecord]:
        chain = [leaf]
        for anc in self.tree.ancestors(leaf):
            if self.tree.role(anc) != "LLM":
                break
            chain.append(anc)
        return chain

    def _logs_for(self, chain: list[SpanRecord]) -> list[LogEvent]:
        ids = {s.span_id for s in chain}
        return [
            e
            for e in self.logs
            if e.span_id in ids or (e.span_id is None and len(self.leaves) == 1)
        ]

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

    def _choose_generation(self, root_answer: str | None, needles: list[str]) -> SpanRecord | None:
        cands = []
        for leaf in self.leaves:
            out, _ = self._output(leaf, ex.Notes())
            model, _, _ = ex.model_info(self._chain(leaf))
            if out or model:
                cands.append((leaf, out))
        if not cands:
            return None
        ctx_end = max((s.span.end_ns for s in self.stages), default=0)
        norm_answer = normalize_ws(root_answer) if root_answer else ""

        def rank(item: tuple[SpanRecord, str | None]) -> tuple[int, int, bool, int, int, str]:
            leaf, out = item
            norm_out = normalize_ws(out) if out else ""
            matches = bool(norm_out and norm_answer) and (
                norm_out in norm_answer or norm_answer in norm_out
            )
            _, hay = self._prompt(leaf, ex.Notes())
            contained = sum(1 for n in needles if n and hay and n in hay)
            return (
                int(matches),
                contained,
                leaf.start_ns >= ctx_end,
                leaf.end_ns or 0,
                leaf.start_ns,
                leaf.span_id,
            )

        return max(cands, key=rank)[0]

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
    def record(self) -> RagInteraction:
        """Run every step and build the frozen record."""
        tree = self.tree
        self.scope, multi = self._scope()
        self.leaves = [s for s in tree.llm_leaves() if s.span_id in self.scope]
        self.stages: list[StageOutput] = build_stages(tree, self.scope)
        join_scores(self.stages)
        needles = [needle(d.content) for st in self.stages for d in st.docs if d.content]

        first_ctx = self.stages[0].span if self.stages else None
        pre_root = self._pipeline_root(self.leaves[-1] if self.leaves else first_ctx)
        root_out = ex.first_value(mapping(pre_root.attributes), ex.OUTPUT_KEYS, self.notes)
        root_answer = cap(ex.value_text(root_out, ex.ANSWER_KEYS))
        gen = self._choose_generation(root_answer, needles)
        proot = self._pipeline_root(gen or first_ctx)
        if proot is not pre_root:
            root_out = ex.first_value(mapping(proot.attributes), ex.OUTPUT_KEYS, self.notes)
            root_answer = cap(ex.value_text(root_out, ex.ANSWER_KEYS))

        prompt, hay = self._prompt(gen, self.notes) if gen else (Prompt(), None)
        documents, context_source = self._documents(gen, hay)
        raw_gen, gen_source = self._output(gen, self.notes) if gen else (None, "none")
        answer, answer_source = (
            (root_answer, "root_output")
            if root_answer
            else (raw_gen, gen_source if raw_gen else "none")
        )
        question, question_source = self._question(proot, gen, prompt)
        chain = self._chain(gen) if gen else []
        model, request_model, provider = ex.model_info(chain)
        session, user, tags, metadata = ex.identity(tree, proot if proot else self.root)
        errors = outcome.span_errors(tree, self.logs)
        fbs = self._feedback()
        completeness: Completeness = (
            "no_root"
            if self.root is None
            else "missing_generation"
            if gen is None
            else "timed_out"
            if not self.root.end_ns
            else "complete"
        )
        status: Status = (
            "error"
            if errors
            else "cancelled"
            if outcome.cancelled(tree.spans)
            else "incomplete"
            if completeness != "complete"
            else "ok"
        )
        starts = [s.start_ns for s in tree.spans if s.start_ns]
        ends = [s.end_ns for s in tree.spans if s.end_ns]
        estimate = self.root is None or not self.root.end_ns
        latency = (
            self.root.duration_ms
            if not estimate and self.root
            else (max(ends) - min(starts)) / 1e6
            if starts and ends and max(ends) >= min(starts)
            else None
        )
        resource = mapping(self.top.resource)
        truncated = (
            self.notes.truncated
            or any(st.truncated for st in self.stages)
            or any(
                isinstance(v, str) and len(v) in KNOWN_LENGTH_LIMITS
                for s in [proot, *chain]
                for v in mapping(s.attributes).values()
            )
        )
        ttft, streaming = self._ttft(chain)
        return RagInteraction(
            trace_id=self.trace_id,
            span_id=self.top.span_id,
            revision=self.revision,
            project=as_str(resource.get("openinference.project.name"))
            or as_str(resource.get("service.name")),
            service_name=as_str(resource.get("service.name")),
            environment=as_str(resource.get("deployment.environment.name"))
            or as_str(resource.get("deployment.environment")),
            convention=self._convention(),
            instrumentation=tuple(
                sorted(
                    {
                        s.scope_name
                        for s in tree.spans
                        if isinstance(s.scope_name, str) and s.scope_name
                    }
                )
            ),
            session_id=session,
            user_id=user,
            tags=tags,
            metadata=metadata,
            attributes=self._flat_attributes(metadata, model, provider),
            started_at=outcome.to_datetime(min(starts, default=0)),
            ended_at=outcome.to_datetime(self.root.end_ns)
            if self.root and self.root.end_ns
            else None,
            latency_ms=latency,
            latency_is_estimate=estimate,
            retrieval_latency_ms=self._covered([st.span for st in self.stages]),
            generation_latency_ms=gen.duration_ms if gen else None,
            ttft_ms=ttft,
            streaming=streaming,
            query=cap(question),
            query_source=question_source,
            retrieval_queries=tuple(
                dict.fromkeys(
                    q for q in [*self._genai_queries(), *(st.query for st in self.stages)] if q
                )
            ),
            chat_history=self._history(prompt),
            documents=documents,
            stages=tuple(st.record() for st in self.stages),
            context_source=context_source,
            prompt=prompt,
            answer=answer,
            answer_source=answer_source,
            finish_reason=self._finish_reason(chain),
            model=model,
            request_model=request_model,
            provider=provider,
            tokens=ex.tokens(chain),
            cost_usd=ex.cost(self.leaves),
            llm_call_count=len(self.leaves),
            generation_span_id=gen.span_id if gen else None,
            status=status,
            errors=tuple(errors),
            feedback=tuple(fbs),
            feedback_polarity=outcome.feedback_polarity(fbs),
            completeness=completeness,
            content_missing=question is None and answer is None,
            content_redacted=self.notes.redacted or any(st.redacted for st in self.stages),
            attributes_dropped=any((s.dropped_attributes_count or 0) > 0 for s in tree.spans),
            possibly_truncated=bool(truncated),
            kind_inferred=tree.inferred,
            multi_pipeline=multi,
            late_spans=self.late_spans,
            span_count=len(tree.spans),
        )

    # --- field helpers ---------------------------------------------------------------------
    def _question(
        self, proot: SpanRecord, gen: SpanRecord | None, prompt: Prompt
    ) -> tuple[str | None, str]:
        raw = ex.first_value(mapping(proot.attributes), ex.INPUT_KEYS, self.notes)
        if text := ex.value_text(raw, ex.QUESTION_KEYS):
            return text, "root_input"
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

    def _history(self, prompt: Prompt) -> tuple[Message, ...]:
        msgs = [m for m in prompt.messages if m.role != "system"]
        last_user = max((i for i, m in enumerate(msgs) if m.role in ("user", "human")), default=-1)
        return tuple(msgs[:last_user]) if last_user > 0 else ()

    def _finish_reason(self, chain: list[SpanRecord]) -> str | None:
        value = ex.chain_attr(chain, ("llm.finish_reason", "gen_ai.response.finish_reasons"))
        if isinstance(value, list):
            value = value[0] if value else None
        return as_str(value)

    def _ttft(self, chain: list[SpanRecord]) -> tuple[float | None, bool]:
        gen = chain[0] if chain else None
        if gen is None:
            return None, False
        for span in chain:
            for event in span.events or ():
                if isinstance(event, Mapping) and event_name(event) == FIRST_TOKEN_EVENT:
                    when = event_time(event)
                    if when and when >= span.start_ns:
                        return (when - span.start_ns) / 1e6, True
        first = as_float(ex.chain_attr(chain, ("gen_ai.response.time_to_first_chunk",)))
        params = parse_object(ex.chain_attr(chain, ("llm.invocation_parameters",))) or {}
        streaming = bool(
            as_bool(ex.chain_attr(chain, ("gen_ai.request.stream",)))
            or as_bool(params.get("stream"))
        )
        return (first * 1000 if first is not None else None), streaming or first is not None

    def _covered(self, spans: list[SpanRecord]) -> float | None:
        spans_ = sorted((s.start_ns, s.end_ns) for s in spans if s.end_ns >= s.start_ns > 0)
        if not spans_:
            return None
        total, cur_s, cur_e = 0, *spans_[0]
        for start, end in spans_[1:]:
            if start > cur_e:
                total, cur_s, cur_e = total + cur_e - cur_s, start, end
            else:
                cur_e = max(cur_e, end)
        return (total + cur_e - cur_s) / 1e6

    def _convention(self) -> Convention:
        found = set()
        for span in self.tree.spans:
            keys = [k for k in mapping(span.attributes) if isinstance(k, str)]
            if any(k.startswith(OI_PREFIXES) for k in keys):
                found.add("openinference")
            if any(
                k
                in (
                    "gen_ai.input.messages",
                    "gen_ai.output.messages",
                    "gen_ai.provider.name",
                    "gen_ai.retrieval.documents",
                )
                for k in keys
            ):
                found.add("genai")
            elif any(k.startswith("gen_ai.prompt.") for k in keys) or any(
                k.startswith("traceloop.") for k in keys
            ):
                found.add("openllmetry")
            elif any(k.startswith("gen_ai.") for k in keys):
                found.add("genai_legacy")
            if any(k.startswith("langfuse.") for k in keys):
                found.add("langfuse")
        if not found and any(e.event_name.startswith("gen_ai.") for e in self.logs):
            found.add("genai_legacy")
        if len(found) > 1:
            return "mixed"
        return cast(Convention, found.pop()) if found else "unknown"

    def _flat_attributes(
        self, metadata: Mapping[str, Any], model: str | None, provider: str | None
    ) -> dict[str, str | int | float | bool]:
        out: dict[str, str | int | float | bool] = {}
        resource = mapping(self.top.resource)
        for key in (
            "service.name",
            "service.version",
            "deployment.environment.name",
            "deployment.environment",
            "openinference.project.name",
        ):
            if (value := as_str(resource.get(key))) is not None:
                out[key] = value[:200]
        root_attrs = mapping(self.top.attributes)
        for key in ("http.route", "gen_ai.agent.name", "gen_ai.data_source.id"):
            if (value := as_str(root_attrs.get(key))) is not None:
                out[key] = value[:200]
        out.update(self._sampling_stamps())
        if model:
            out["model"] = model
        if provider:
            out["provider"] = provider
        for key, value in sorted(metadata.items()):
            if len(out) >= MAX_ATTRIBUTE_KEYS or key.startswith("ls_"):
                continue
            if isinstance(value, bool | int | float) or (isinstance(value, str) and value):
                out[f"metadata.{key}"] = value[:200] if isinstance(value, str) else value
        return out

    def _sampling_stamps(self) -> dict[str, str | int | float]:
        """What a tail-sampling tier stamped (SPAN_SPEC §5), so the job can weight for its drops.

        Instrumentation-scope attributes first (where the Collector's tail_sampling processor
        records ``tailsampling.policy``), then resource, then span attributes (root first); the
        first usable value wins.
        """
        out: dict[str, str | int | float] = {}
        spans = [self.top, *(s for s in self.tree.spans if s is not self.top)]
        for key in SAMPLING_KEYS:
            for span in spans:
                value = mapping(span.scope_attributes).get(key)
                value = mapping(span.resource).get(key) if value is None else value
                value = mapping(span.attributes).get(key) if value is None else value
                if isinstance(value, int | float) and not isinstance(value, bool):
                    out[key] = value
                elif isinstance(value, str) and value.strip():
                    out[key] = value.strip()[:200]
                else:
                    continue
                break
        return out

    def _feedback(self) -> list[Feedback]:
        given = [f for f in self.feedback if f.trace_id in (None, self.trace_id)]
        items = given + outcome.inline_feedback(self.tree, self.trace_id)
        return sorted(items, key=lambda f: f.created_at)
