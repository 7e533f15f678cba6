"""The bundled samples: the transfer demo's target chip is bundled, never seeded, and shares
an op with the seed; every bundled file has its origin and licence in LICENSES.md."""

from __future__ import annotations

from tunemem.ingest.readers import read_any
from tunemem.ingest.samples import SAMPLES_DIR, sample_paths, target_paths


def test_target_chip_is_bundled_but_not_seeded() -> None:
    targets = target_paths()
    assert targets, "no target recording bundled"
    assert not set(targets) & set(sample_paths())
    seeded = list(read_any(sample_paths()))
    seeded_chips = {record.context.chip for record in seeded}
    seeded_ops = {record.task.op for record in seeded}
    for record in read_any(targets):
        assert record.context.chip == "w6600"
        assert record.context.chip not in seeded_chips  # an unseen chip for the demo
        assert record.task.op in seeded_ops  # with lessons of that op from other chips
        assert len(record.attempts) > 1000  # the whole recorded search space


def test_every_bundled_file_has_its_licence_line() -> None:
    licences = (SAMPLES_DIR / "LICENSES.md").read_text(encoding="utf-8")
    for path in [*target_paths(), *sample_paths()]:
        relative = path.relative_to(SAMPLES_DIR)
        folder = str(relative.parent)
        assert str(relative) in licences or f"`{folder}/" in licences, relative
