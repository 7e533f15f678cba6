"""LLM proposer: any OpenAI-compatible chat endpoint chooses the next configuration.

It sends the task, the rendered lessons and its own past outcomes (`agent_client.prompts`),
parses a JSON answer, checks the configuration against the parameter space, asks once more
with the problem stated when the answer is unusable, and otherwise falls back to the
structured proposer (saying so in the proposal's origin).
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from tunemem.agent_client import prompts
from tunemem.agent_client.proposers.base import Proposal, ProposalRequest, Proposer
from tunemem.agent_client.proposers.structured import StructuredProposer
from tunemem.search.hints import config_key


class LLMAnswerError(ValueError):
    """The model's answer is not a usable configuration."""


def parse_answer(content: str, request: ProposalRequest) -> Proposal:
    """Read `{"config", "used", "rationale"}` from a reply, tolerating code fences."""
    match = re.search(r"\{.*\}", content, flags=re.DOTALL)
    if not match:
        raise LLMAnswerError("no JSON object in the reply")
    try:
        answer = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise LLMAnswerError(f"invalid JSON ({exc.msg})") from exc
    config = answer.get("config") if isinstance(answer, dict) else None
    if not isinstance(config, dict):
        raise LLMAnswerError('the object has no "config" mapping')
    missing = [name for name in request.space if name not in config]
    if missing:
        raise LLMAnswerError(f"parameters missing: {missing}")
    config = {name: config[name] for name in request.space}
    outside = {k: v for k, v in config.items() if v not in request.space[k]}
    if outside:
        raise LLMAnswerError(f"values not allowed: {outside}")
    if config_key(request.space, config) in request.tried():
        raise LLMAnswerError("that configuration was already tried")
    offered = {lesson.id for lesson in request.lessons}
    used = tuple(str(i) for i in answer.get("used") or [] if str(i) in offered)
    return Proposal(config, used, "llm", str(answer.get("rationale") or "")[:500])


class LLMProposer(Proposer):
    """Proposes through an OpenAI-compatible `/chat/completions` endpoint."""

    name = "llm"

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str | None = None,
        temperature: float = 0.2,
        timeout_s: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        fallback: Proposer | None = None,
    ) -> None:
        self.model = model
        self.temperature = temperature
        self.fallback = fallback or StructuredProposer()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            base_url=url.rstrip("/"), headers=headers, timeout=timeout_s, transport=transport
        )

    def _chat(self, messages: list[dict[str, str]]) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "response_format": {"type": "json_object"},
        }
        for attempt in Retrying(
            retry=retry_if_exception_type(httpx.TransportError),
            wait=wait_random_exponential(multiplier=0.5, max=8),
            stop=stop_after_attempt(3),
            reraise=True,
        ):
            with attempt:
                response = self._http.post("/chat/completions", json=body)
        response.raise_for_status()
        data = response.json()
        try:
            return str(data["choices"][0]["message"]["content"] or "")
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMAnswerError("response has no choices[0].message.content") from exc

    def propose(self, request: ProposalRequest) -> Proposal:
        messages = [
            {"role": "system", "content": prompts.SYSTEM_PROMPT},
            {"role": "user", "content": prompts.user_prompt(request)},
        ]
        problem = ""
        for _ in range(2):
            try:
                content = self._chat(messages)
            except (httpx.HTTPError, LLMAnswerError, ValueError) as exc:
                problem = f"endpoint error: {exc}"
                break
            try:
                return parse_answer(content, request)
            except LLMAnswerError as exc:
                problem = str(exc)
                messages += [
                    {"role": "assistant", "content": content},
                    {"role": "user", "content": prompts.repair_prompt(problem)},
                ]
        fallback = self.fallback.propose(request)
        return Proposal(
            fallback.config,
            fallback.used,
            f"llm-fallback:{fallback.origin}",
            f"LLM answer unusable ({problem}); {fallback.rationale}",
        )

    def close(self) -> None:
        self._http.close()
