"""A chip name the registry does not know is served, and the answer says so with near names."""

from __future__ import annotations

from tunemem import platforms
from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.lessons import LessonCreate


def _retrieve(service, chip: str):
    return service.retrieve(
        RetrieveRequest(
            query="tile", task={"op": "convolution"}, context={"chip": chip}, stage="draft"
        )
    )


def test_unknown_chip_gets_a_warning_and_known_chip_none(make_service) -> None:
    service = make_service(index="memory")
    service.add_lessons(
        [
            LessonCreate(
                kind="insight", text="tile the convolution", applicability={"op": "convolution"}
            )
        ]
    )
    unknown = _retrieve(service, "Radeon RX 9999 XTX")
    assert unknown.chip is None and unknown.scope_chain == ["backend:hip", "global"]
    (warning,) = unknown.warnings
    assert "unknown chip 'Radeon RX 9999 XTX'" in warning and "hip" in warning
    assert "did you mean" in warning and "radeon-rx-7900-xtx" in warning
    known = _retrieve(service, "MI300X")
    assert known.chip == "mi300x" and known.warnings == []


def test_close_chips_are_known_ids_nearest_first() -> None:
    near = platforms.close_chips("H2000")
    assert near and near[0] == "h200"
    assert all(platforms.get_chip(chip_id) for chip_id in near)
    assert platforms.close_chips("zzzz qqq") == []
