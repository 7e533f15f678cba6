"""Pure ranking and value logic: gating, value estimation, blending, exploration, rewards.

No I/O, no database, no HTTP: functions over plain data, tested with hand-computed numbers.
"""

from retrieval.gating import Query, gate
from retrieval.ranking import Candidate, RankedLesson, RankingSettings, rank
from retrieval.rewards import RewardStats, draft_reward, refine_reward, stage_reward
from retrieval.values import ScopeStats, ValueEstimate, update_stats, value_estimate

__all__ = [
    "Candidate",
    "Query",
    "RankedLesson",
    "RankingSettings",
    "RewardStats",
    "ScopeStats",
    "ValueEstimate",
    "draft_reward",
    "gate",
    "rank",
    "refine_reward",
    "stage_reward",
    "update_stats",
    "value_estimate",
]
