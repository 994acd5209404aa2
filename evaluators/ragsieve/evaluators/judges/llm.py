"""OpenAI-compatible chat client for the LLM judges: retries, concurrency limit, usage and cost."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from ragsieve.evaluators.errors import JudgeError

log = logging.getLogger(__name__)


class LLMConfig(BaseModel):
    """Where and how the LLM judges call a model (any OpenAI-compatible ``base_url``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field("https://api.openai.com/v1", description="OpenAI-compatible endpoint.")
    model: str = Field("gpt-4o-mini", description="Judge model name sent to the endpoint.")
    api_key: SecretStr | None = Field(None, description="API key; read from the env by the CLI.")
    timeout_s: float = Field(60.0, gt=0, description="Per-request timeout in seconds.")
    max_retries: int = Field(3, ge=0, description="Retries on 429, 5xx, timeouts, bad JSON.")
    backoff_s: float = Field(1.0, ge=0, description="First retry delay; doubles each retry.")
    concurrency: int = Field(4, ge=1, description="Simultaneous requests at most.")
    n_runs: int = Field(1, ge=1, le=10, description="Runs averaged per verdict.")
    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int = Field(1024, ge=16)
    price_per_1k_prompt: float = Field(0.0, ge=0, description="USD per 1k prompt tokens.")
    price_per_1k_completion: float = Field(0.0, ge=0, description="USD per 1k completion tokens.")
    redact_pii: bool = Field(True, description="Redact emails, phones, card/ID numbers first.")
    extra_pii_patterns: tuple[str, ...] = Field((), description="Extra regexes to redact.")
    uncertainty_band: tuple[float, float] = Field(
        (0.35, 0.8), description="Cascade: offline scores inside [lo, hi] go to the LLM judge."
    )
    json_mode: bool = Field(True, description="Ask for response_format=json_object.")

    @model_validator(mode="after")
    def _band(self) -> LLMConfig:
        lo, hi = self.uncertainty_band
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(f"uncertainty_band must satisfy 0 <= lo <= hi <= 1 (got {lo}, {hi})")
        return self


@dataclass(slots=True)
class Completion:
    """One model reply with its token usage and the time spent waiting for it."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float


_FAMILIES = (
    "gpt",
    "o1",
    "o3",
    "o4",
    "claude",
    "gemini",
    "gemma",
    "llama",
    "mistral",
    "mixtral",
    "qwen",
    "deepseek",
    "phi",
    "command",
    "granite",
    "yi",
    "falcon",
)


def model_family(model: str | None) -> str | None:
    """The vendor family of a model name ('openai/gpt-4o-mini' -> 'gpt'), or None if unknown."""
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    for fam in _FAMILIES:
        if re.match(rf"{fam}(?![a-z])", name) or re.match(rf"(?:meta-)?{fam}", name):
            return {"mixtral": "mistral", "o1": "gpt", "o3": "gpt", "o4": "gpt"}.get(fam, fam)
    m = re.match(r"[a-z]+", name)
    return m.group(0) if m else None


def parse_json_object(text: str) -> dict[str, Any]:
    """Parse the first JSON object in a reply (tolerates code fences); raise JudgeError if none."""
    cleaned = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        obj = json.loads(cleaned)
    except json.JSONDecodeError:
        start, end = cleaned.find("{"), cleaned.rfind("}")
        try:
            obj = json.loads(cleaned[start : end + 1]) if start >= 0 < end else None
        except json.JSONDecodeError:
            obj = None
    if not isinstance(obj, dict):
        raise JudgeError(f"reply is not a JSON object: {text[:80]!r}")
    return obj


class LLMClient:
    """A shared ``AsyncOpenAI`` with our own retry/backoff and a concurrency semaphore."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self._client: Any = None
        self._sem: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _ensure(self) -> tuple[Any, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            try:
                from openai import AsyncOpenAI
            except ImportError as exc:  # pragma: no cover - openai is a core dependency today
                raise JudgeError("the LLM judge needs: pip install 'ragsieve[openai]'") from exc
            key = self.config.api_key.get_secret_value() if self.config.api_key else "unused"
            self._client = AsyncOpenAI(
                base_url=self.config.base_url,
                api_key=key,
                timeout=self.config.timeout_s,
                max_retries=0,
            )
            self._sem = asyncio.Semaphore(self.config.concurrency)
            self._loop = loop
        return self._client, self._sem  # type: ignore[return-value]

    async def complete(self, messages: list[dict[str, str]]) -> Completion:
        """Send ``messages``; retry on rate limits, 5xx, timeouts; raise JudgeError at the end."""
        import openai

        client, sem = self._ensure()
        cfg = self.config
        last: Exception | None = None
        for attempt in range(cfg.max_retries + 1):
            if attempt:
                await asyncio.sleep(
                    cfg.backoff_s * 2 ** (attempt - 1) * (0.75 + random.random() / 2)
                )
            kwargs: dict[str, Any] = {
                "model": cfg.model,
                "messages": messages,
                "temperature": cfg.temperature,
                "max_tokens": cfg.max_tokens,
            }
            if cfg.json_mode:
                kwargs["response_format"] = {"type": "json_object"}
            t0 = time.perf_counter()
            try:
                async with sem:
                    resp = await client.chat.completions.create(**kwargs)
            except (
                openai.RateLimitError,
                openai.InternalServerError,
                openai.APITimeoutError,
                openai.APIConnectionError,
            ) as exc:
                last = exc
                log.debug("judge call failed (attempt %d): %s", attempt + 1, exc)
                continue
            except openai.APIStatusError as exc:  # 4xx other than 429: retrying will not help
                raise JudgeError(
                    f"judge endpoint answered {exc.status_code}: {exc.message}"
                ) from exc
            latency = (time.perf_counter() - t0) * 1000
            text = (resp.choices[0].message.content or "") if resp.choices else ""
            usage = resp.usage
            return Completion(
                text,
                getattr(usage, "prompt_tokens", 0) or 0,
                getattr(usage, "completion_tokens", 0) or 0,
                latency,
            )
        raise JudgeError(f"judge endpoint failed after {cfg.max_retries + 1} attempts: {last}")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD cost of a call at the configured prices."""
        return (
            prompt_tokens * self.config.price_per_1k_prompt
            + completion_tokens * self.config.price_per_1k_completion
        ) / 1000.0
