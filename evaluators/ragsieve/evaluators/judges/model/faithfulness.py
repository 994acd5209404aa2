"""Faithfulness by a local model: is each claim of the answer backed by some context window?

The answer is read into claims as the offline judge reads it (:func:`.offline.claims.
parse_answer`: abstentions, framing and injected instructions set aside). Each claim is checked
against its best windows of the context (:mod:`.windows`: long chunks cut to the model's length,
the windows sharing most content words with the claim first); a claim's support is the best
window's probability, and the answer's score the weakest claim's: one claim nothing backs makes
the answer unfaithful. The explanation and ``metadata["claims"]`` say, per claim, which window
decided and with what probability (and, for a token model, which words it marks hallucinated).
"""

from __future__ import annotations

from typing import Any

from ragsieve.evaluators.judges.model.base import ModelJudge
from ragsieve.evaluators.judges.model.runtime import LocalModel, Scored
from ragsieve.evaluators.judges.model.windows import Window, best_windows, budget, cut
from ragsieve.evaluators.judges.offline.base import chunk_texts
from ragsieve.evaluators.judges.offline.claims import parse_answer
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.evaluators.records import EvalResult, RagInteraction


class ModelFaithfulnessJudge(ModelJudge):
    """Every claim backed by the context, as a pair (NLI) or token (hallucination) model says."""

    name = "faithfulness"

    def __init__(
        self,
        model: LocalModel,
        *,
        threshold: float = DEFAULT_THRESHOLDS["faithfulness"],
        windows_per_claim: int = 3,
        **options: Any,
    ) -> None:
        if model.manifest.task not in ("pair", "token"):
            from ragsieve.evaluators.judges.model.manifest import ModelFolderError

            raise ModelFolderError(
                f"{model.manifest.folder}: task {model.manifest.task!r} cannot judge"
                " faithfulness (it needs a pair or token model)"
            )
        super().__init__(model, threshold=threshold, **options)
        self.windows_per_claim = max(1, windows_per_claim)
        self.version = self._tag("faithfulness", f":w{self.windows_per_claim}")

    def _judge(self, interaction: RagInteraction) -> EvalResult:
        answer = interaction.answer or ""
        if not answer.strip():
            return self.result(interaction, "skipped", None, "no answer")
        parsed = parse_answer(answer)
        chunks = chunk_texts(interaction)
        if parsed.abstained:
            why = "the answer declines to answer: " + parsed.abstentions[0]
            return self.result(interaction, "abstained", None, why, {"claims": []})
        if not chunks:
            return self.result(interaction, "skipped", None, "no context reached the prompt")
        if not parsed.claims:
            return self.result(interaction, "skipped", None, "the answer states nothing to check")
        claims = parsed.claims
        size = budget(self.model, claims)
        windows = [w for cid, _, text in chunks for w in cut(self.model, cid, text, size)]
        plan = [
            (i, w)
            for i, c in enumerate(claims)
            for w in best_windows(c, windows, self.windows_per_claim)
        ]
        scored = self.score([(w.text, claims[i]) for i, w in plan])
        best: dict[int, tuple[Window, Scored]] = {}
        for (i, w), s in zip(plan, scored, strict=True):
            if i not in best or s.support > best[i][1].support:
                best[i] = (w, s)
        verdicts = [self._claim(c, *best[i]) for i, c in enumerate(claims)]
        supports = [v["probability"] for v in verdicts]
        score = min(supports)
        label = self.decide(score, "faithful", "unfaithful")
        meta: dict[str, Any] = {
            "claims": verdicts,
            "supported": sum(v["supported"] for v in verdicts),
            "total": len(verdicts),
            "windows": len(windows),
            "pairs": len(plan),
            # not "evidence": that key holds the offline judge's fit inputs (judges fit reads it)
            "claim_support": {
                "min": round(score, 6),
                "mean": round(sum(supports) / len(supports), 6),
                "share": round(sum(v["supported"] for v in verdicts) / len(verdicts), 6),
            },
            "evidence_chunks": sorted({v["chunk"] for v in verdicts if v["supported"]}),
        }
        if parsed.suspicious:
            meta["suspicious_instructions"] = parsed.suspicious[:5]
        return self.result(interaction, label, score, self._explain(label, score, verdicts), meta)

    def _claim(self, claim: str, window: Window, s: Scored) -> dict[str, Any]:
        out: dict[str, Any] = {
            "claim": claim,
            "supported": s.support >= self.threshold,
            "probability": round(s.support, 6),
            "chunk": window.chunk,
            "window": [window.start, window.end],
        }
        if s.contradict is not None:
            out["contradiction"] = round(s.contradict, 6)
        if self.model.manifest.task == "token":
            out["hallucinated"] = [
                {"text": claim[a:b], "probability": round(p, 4)} for a, b, p in s.spans
            ]
        return out

    def _explain(self, label: str, score: float, verdicts: list[dict[str, Any]]) -> str:
        n_ok = sum(v["supported"] for v in verdicts)
        cmp = "<" if label == "unfaithful" else ">="
        head = f"{label} ({score:.2f} {cmp} {self.threshold}): {n_ok}/{len(verdicts)} claims"
        head += f" backed by the context ({self.model.manifest.name})"
        weakest = min(range(len(verdicts)), key=lambda i: verdicts[i]["probability"])
        shown = [i for i, v in enumerate(verdicts) if not v["supported"]][:3] or [weakest]
        parts = []
        for i in shown:
            v = verdicts[i]
            a, b = v["window"]
            bit = f"claim {i + 1} '{v['claim'][:120]}': best window {v['chunk']}[{a}:{b}]"
            bit += f" P(support)={v['probability']:.2f}"
            if "contradiction" in v:
                bit += f", P(contradiction)={v['contradiction']:.2f}"
            if v.get("hallucinated"):
                bit += "; marked: " + ", ".join(f"'{h['text']}'" for h in v["hallucinated"][:3])
            parts.append(bit)
        lead = "weakest " if label != "unfaithful" else ""
        return head + "; " + lead + "; ".join(parts)


__all__ = ["ModelFaithfulnessJudge"]
