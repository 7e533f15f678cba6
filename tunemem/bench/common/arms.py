"""The benchmark arms, their proposers and the memory's settings, defined once for `bench
learning`, `bench live`, `bench tuners` and `bench autotune`.

An arm is a set of ranking options sent with every retrieve (None: no memory; {}: the
service's own defaults, what a user gets). Each explicit arm names its value estimate, so an
arm runs what its name says whatever the service's default is.
"""

from __future__ import annotations

from typing import Any

from tunemem.agent_client.client import MemoryClient
from tunemem.agent_client.proposers import Proposer, create_proposer

# k_recall 60: the explicit arms re-rank the same wide pool, so lessons from other backends can
# surface; `default` and `exemplars` recall as the service does by itself.
ARMS: dict[str, dict[str, Any] | None] = {
    "random": None,
    "similarity": {"lam": 0.0, "exploration_c": 0.0, "k_recall": 60},
    # the chain estimate (a lesson's own outcomes), without and with scope back-off
    "value": {"lam": 0.5, "backoff": False, "k_recall": 60, "values": "chain"},
    "value_backoff": {"lam": 0.5, "backoff": True, "k_recall": 60, "values": "chain"},
    # the generalised value (recorded reach, neighbour chips, source prior)
    "generalised": {"lam": 0.5, "k_recall": 60, "values": "generalised", "value_floor": 0.1},
    "exemplars": {},
    "default": {},
    # the service's defaults with recorded claims weighed by how well outcomes reproduced them
    "trust": {"claim_power": 2.0},
}
# The arms `bench live` runs on the GPU (a subset: each costs GPU time per held-out shape).
LIVE_ARMS: tuple[str, ...] = ("random", "similarity", "value_backoff", "default")

# The proposer of each arm's scored runs: `default` is what a user's agent gets, the service's
# own search through POST /v1/suggest (exemplars first, then its performance model);
# `exemplars` and the other arms use the structured proposer over the arm's ranking (for
# `exemplars`, the service's default ranking: the default before the model). Runs over source
# chips or shapes always use the structured proposer, since they hide their own lessons and the
# service's search cannot.
PROPOSERS: dict[str, str] = {"default": "suggest"}

WIDEN_K = 30  # lessons asked for when none of the k carries an untried configuration

# index=memory: exact cosine over the (small) lesson set, no Chroma directory per run.
# model_wait_s: a suggest waits for the model trained on what was just ingested, so that a
# run's answers do not depend on how fast the machine trains (a user's service never waits).
SERVICE_SETTINGS: dict[str, Any] = {"index": "memory", "model_wait_s": 300.0}
# bench live and autotune: the exemplars of one sweep differ only in their numbers and must not
# be merged as near-duplicates (dedup_threshold 1.0).
LIVE_SERVICE_SETTINGS: dict[str, Any] = {**SERVICE_SETTINGS, "dedup_threshold": 1.0}


def arm_proposer(arm: str, client: MemoryClient, options: dict[str, Any] | None) -> Proposer:
    """The proposer of an arm's scored runs (see PROPOSERS)."""
    name = PROPOSERS.get(arm, "structured")
    if name == "suggest":
        return create_proposer("suggest", client=client, options=options)
    return create_proposer(name)
