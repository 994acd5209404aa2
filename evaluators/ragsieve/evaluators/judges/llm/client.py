"""OpenAI-compatible chat client for the LLM judges: retries, concurrency limit, usage and cost."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from ragsieve.evaluators.errors import JudgeError
from ragsieve.evaluators.judges.llm.families import is_reasoning_model

log = logging.getLogger(__name__)


class LLMConfig(BaseModel):
    """Where and how the LLM judges call a model (any OpenAI-compatible ``base_url``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field("https://api.openai.com/v1", description="OpenAI-compatible endpoint.")
    model: str = Field("gpt-4o-mini", description="Judge model name sent to the endpoint.")
    api_key: SecretStr | None = Field(None, description="API key; read from the env by the CLI.")
    timeout_s: float = Field(60.0, gt=0, description="Per-request timeout in seconds.")
    max_retries: int = Field(
        3, ge=0, description="Retries on 429, 5xx, timeouts and replies that fail to parse."
    )
    backoff_s: float = Field(1.0, ge=0, description="First retry delay; doubles each retry.")
    concurrency: int = Field(4, ge=1, description="Simultaneous requests at most.")
    n_runs: int = Field(1, ge=1, le=10, description="Runs averaged per verdict.")
    temperature: float = Field(
        0.0, ge=0, le=2, description="Not sent to o-series models (o1, o3, o4...): they reject it."
    )
    max_tokens: int = Field(
        1024, ge=16, description="Sent as max_completion_tokens to o-series models."
    )
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
    value: Any = None  # what ``parse`` made of ``text``, when a parser was given


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a reply (code fences and prose around it are tolerated).

    Decoding is tried from every ``{`` in turn, so "I think {maybe} {...}" still finds the
    object; the first complete object wins. Raises JudgeError when there is none.
    """
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start >= 0:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            return obj
        start = text.find("{", start + 1)
    raise JudgeError(f"reply is not a JSON object: {text[:80]!r}")


class LLMCallError(JudgeError):
    """A judge call that failed for good, with the tokens its attempts consumed."""

    def __init__(self, message: str, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


MAX_RETRY_AFTER_S = 60.0


def retry_after_s(headers: Any) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, ``retry-after`` in seconds or as
    an HTTP date), capped at ``MAX_RETRY_AFTER_S``; None when absent or unreadable."""
    if headers is None:
        return None
    wait: float | None = None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            wait = float(ms) / 1000.0
        except ValueError:
            wait = None
    raw = headers.get("retry-after")
    if wait is None and raw:
        try:
            wait = float(raw)
        except ValueError:
            try:
                when = parsedate_to_datetime(raw)
            except (TypeError, ValueError):
                return None
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            wait = (when - datetime.now(UTC)).total_seconds()
    if wait is None or not math.isfinite(wait):
        return None
    return min(max(wait, 0.0), MAX_RETRY_AFTER_S)


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

    def request_kwargs(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """The chat.completions arguments; o-series models get ``max_completion_tokens`` and no
        ``temperature`` (they reject both ``temperature`` other than 1 and ``max_tokens``)."""
        cfg = self.config
        kwargs: dict[str, Any] = {"model": cfg.model, "messages": messages}
        if is_reasoning_model(cfg.model):
            kwargs["max_completion_tokens"] = cfg.max_tokens
        else:
            kwargs["temperature"] = cfg.temperature
            kwargs["max_tokens"] = cfg.max_tokens
        if cfg.json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    def _delay(self, attempt: int, asked: float | None) -> float:
        backoff = self.config.backoff_s * 2 ** (attempt - 1) * (0.75 + random.random() / 2)
        return max(backoff, asked or 0.0)

    async def complete(
        self, messages: list[dict[str, str]], parse: Callable[[str], Any] | None = None
    ) -> Completion:
        """Send ``messages`` and return the reply with the usage of every attempt.

        Retries (``max_retries``, exponential backoff, at least the server's ``Retry-After``) on
        429, 5xx, timeouts, connection errors and, when ``parse`` is given, on replies that
        ``parse`` rejects with JudgeError. A final failure raises LLMCallError carrying the tokens
        already paid for.
        """
        import openai

        client, sem = self._ensure()
        kwargs = self.request_kwargs(messages)
        used = [0, 0]
        latency = 0.0
        last: Exception | None = None
        asked: float | None = None
        for attempt in range(self.config.max_retries + 1):
            if attempt:
                await asyncio.sleep(self._delay(attempt, asked))
            asked = None
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
                response = getattr(exc, "response", None)
                asked = retry_after_s(getattr(response, "headers", None))
                log.debug("judge call failed (attempt %d): %s", attempt + 1, exc)
                continue
            except openai.APIStatusError as exc:  # 4xx other than 429: retrying will not help
                raise LLMCallError(
                    f"judge endpoint answered {exc.status_code}: {exc.message}", *used
                ) from exc
            latency += (time.perf_counter() - t0) * 1000
            text = (resp.choices[0].message.content or "") if resp.choices else ""
            usage = resp.usage
            used[0] += getattr(usage, "prompt_tokens", 0) or 0
            used[1] += getattr(usage, "completion_tokens", 0) or 0
            value = None
            if parse is not None:
                try:
                    value = parse(text)
                except JudgeError as exc:
                    last = exc
                    log.debug("judge reply rejected (attempt %d): %s", attempt + 1, exc)
                    continue
            return Completion(text, used[0], used[1], latency, value)
        attempts = self.config.max_retries + 1
        if isinstance(last, JudgeError):
            raise LLMCallError(f"{last} (after {attempts} attempt(s))", *used)
        raise LLMCallError(f"judge endpoint failed after {attempts} attempts: {last}", *used)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD cost of a call at the configured prices."""
        return (
            prompt_tokens * self.config.price_per_1k_prompt
            + completion_tokens * self.config.price_per_1k_completion
        ) / 1000.0
