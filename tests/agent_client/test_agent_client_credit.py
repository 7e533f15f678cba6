"""Which lessons an attempt credits: the proposal's, and the setting lessons its config carries."""

from __future__ import annotations

from tunemem.agent_client.credit import carried_settings, credited

LESSONS = [
    {"id": "ex", "hint": {"config": {"a": 1, "b": 2}}},
    {"id": "pa", "hint": {"param": "a", "value": 1, "effect": "prefer"}},
    {"id": "pb", "hint": {"param": "b", "value": "4", "effect": "prefer"}},
    {"id": "va", "hint": {"param": "a", "value": 1, "effect": "avoid"}},
    {"id": "fail", "hint": {"avoid": {"a": 1}, "failure_rate": 0.9}},
    {"id": "plain", "hint": None},
]


def test_carried_prefer_settings_are_credited_and_nothing_else() -> None:
    assert carried_settings(LESSONS, {"a": 1, "b": 2}) == ["pa"]
    assert carried_settings(LESSONS, {"a": 2, "b": 4}) == ["pb"]  # 4 and "4" are one setting
    assert carried_settings(LESSONS, {"c": 1}) == []


def test_credited_keeps_the_proposal_first_and_each_id_once() -> None:
    assert credited(["ex"], LESSONS, {"a": 1, "b": 4}) == ["ex", "pa", "pb"]
    assert credited(["pa"], LESSONS, {"a": 1, "b": 2}) == ["pa"]
    assert credited([], LESSONS, {"a": 3, "b": 3}) == []


class _RecordingClient:
    """A SYNTHETIC memory answering every retrieve with the same three lessons."""

    def __init__(self, lessons: list) -> None:
        self.lessons = lessons
        self.reports: list[list[str]] = []

    def retrieve(self, **_: object):
        from tunemem.agent_client.models import Retrieval

        return Retrieval(retrieval_id=f"r{len(self.reports)}", lessons=self.lessons)

    def report(self, retrieval_id: str, outcome: object, *, used: list[str], **_: object):
        from tunemem.agent_client.models import OutcomeReceipt

        self.reports.append(list(used))
        return OutcomeReceipt(rewards={lid: 1.0 for lid in used}, values={})

    def close(self) -> None:
        pass


def test_the_agent_reports_the_carried_setting_beside_the_exemplar() -> None:
    from tunemem.agent_client.models import RetrievedLesson
    from tunemem.agent_client.proposers import create_proposer
    from tunemem.agent_client.run import run_graph
    from tunemem.ingest.samples import TARGETS_DIR
    from tunemem.kernels.runners.replay import ReplayRunner

    runner = ReplayRunner(TARGETS_DIR / "convolution" / "W6600.json.gz")
    space = runner.parameter_space()
    config = {name: values[0] for name, values in space.items()}
    other = space["block_size_x"][1]
    lessons = [
        RetrievedLesson("ex", "exemplar", "try this", hint={"config": config}, score=1.0),
        RetrievedLesson(
            "carried",
            "insight",
            "prefer",
            hint={"param": "block_size_x", "value": config["block_size_x"], "effect": "prefer"},
            score=0.5,
        ),
        RetrievedLesson(
            "not-carried",
            "insight",
            "prefer",
            hint={"param": "block_size_x", "value": other, "effect": "prefer"},
            score=0.4,
        ),
    ]
    client = _RecordingClient(lessons)
    result = run_graph(runner, create_proposer("structured"), client, 1)  # type: ignore[arg-type]
    assert client.reports == [["ex", "carried"]]
    assert result.attempts[0]["used"] == ["ex"]  # the proposal's own credit is kept apart
    assert set(result.attempts[0]["rewards"]) == {"ex", "carried"}
