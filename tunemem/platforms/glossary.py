"""The glossary of a transferred lesson: each source term it uses, its counterpart on the target
chip, what the target chip's descriptor says about it, and a caveat where the mapping changes
a quantity ("the source's warp is 32 lanes; a wavefront on mi300x is 64 lanes").

Figures come from the chip descriptors (`platforms.chips`): warp width (`warp_size`, 64 on CDNA
and 32 on RDNA), on-chip memory per compute unit, compute-unit count and the matrix unit's name;
where a chip is not given or not known, the backend's warp width is used and the rest is left
out rather than guessed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tunemem.platforms.backends import get_backend
from tunemem.platforms.chips import Chip
from tunemem.platforms.concepts import Concept, get_concept


@dataclass(frozen=True)
class GlossaryEntry:
    """One source term of a lesson and its counterpart on the target.

    `counterpart` is None where the target has none (`note` says what it has instead);
    `rendered` says whether `rendered_text` uses the counterpart for at least one occurrence;
    `caveat` is set where the mapping changes a quantity the text depends on.
    """

    term: str
    concept: str
    counterpart: str | None
    rendered: bool
    note: str | None = None
    caveat: str | None = None


@dataclass(frozen=True)
class TermUse:
    """How a lesson uses one source term: its first spelling, whether any occurrence was
    rendered, and whether any was kept because a number is attached to it."""

    concept: str
    spelling: str
    rendered: bool
    quantified: bool


@dataclass(frozen=True)
class _Side:
    backend: str
    chip: Chip | None

    @property
    def name(self) -> str:
        return self.chip.id if self.chip is not None and self.chip.known else self.backend

    @property
    def known_chip(self) -> Chip | None:
        return self.chip if self.chip is not None and self.chip.known else None

    def warp_width(self) -> int | None:
        if self.known_chip is not None and self.known_chip.warp_size:
            return self.known_chip.warp_size
        if self.known_chip is not None and self.backend in ("ascend", "cpu"):
            return None
        return get_backend(self.backend).warp_size


def _term(concept: Concept, backend: str, plural: bool = False) -> str:
    term = concept.preferred(backend)
    if term is None:
        return concept.id.replace("_", " ")
    return (term.plural or term.singular) if plural else term.singular


def _cu(side: _Side) -> str:
    return _term(get_concept("compute_unit"), side.backend)


# Per concept: the fact a chip's descriptor gives (None: not known), its wording, and what a
# difference between source and target means for the lesson's text.
def _memory_fact(side: _Side) -> float | None:
    chip = side.known_chip
    return chip.onchip_mem_kb_per_unit if chip is not None else None


def _memory_words(side: _Side, value: float) -> str:
    term = _term(get_concept("shared_memory"), side.backend)
    return f"{side.name} has {value:g} KB of {term} per {_cu(side)}"


def _units_fact(side: _Side) -> float | None:
    chip = side.known_chip
    return chip.compute_units if chip is not None else None


def _units_words(side: _Side, value: float) -> str:
    return f"{side.name} has {value:g} {_term(get_concept('compute_unit'), side.backend, True)}"


def _width_fact(side: _Side) -> float | None:
    return side.warp_width()


def _width_words(side: _Side, value: float) -> str:
    warp = get_concept("warp")
    return f"a {_term(warp, side.backend)} on {side.name} is {value:g} lanes"


_Fact = tuple[Callable[[_Side], float | None], Callable[[_Side, float], str], str]
_FACTS: dict[str, _Fact] = {
    "shared_memory": (
        _memory_fact,
        _memory_words,
        "sizes and tile footprints in the text are the source's",
    ),
    "compute_unit": (
        _units_fact,
        _units_words,
        "counts, grid sizes and waves of blocks in the text are the source's",
    ),
    "warp": (
        _width_fact,
        _width_words,
        "per-lane arithmetic in the text (lanes, bytes or elements per thread) is the source's",
    ),
    "num_warps": (
        _width_fact,
        _width_words,
        "the same num_warps launches a different number of threads per program",
    ),
}


def _matrix_entry(use: TermUse, concept: Concept, source: _Side, target: _Side) -> GlossaryEntry:
    chip = target.known_chip
    counterpart = concept.preferred(target.backend)
    if chip is not None and chip.matrix_unit is None:
        family = f" ({chip.family})" if chip.family else ""
        return GlossaryEntry(
            use.spelling,
            concept.id,
            None,
            use.rendered,
            note=concept.absent.get(target.backend) or f"{chip.id}{family} has no matrix unit",
            caveat=f"{chip.id}{family} has no matrix unit: advice about {use.spelling} does "
            "not apply as written",
        )
    if counterpart is None:
        return GlossaryEntry(
            use.spelling, concept.id, None, use.rendered, note=concept.absent.get(target.backend)
        )
    note = f"{chip.id}: {chip.matrix_unit}" if chip is not None else None
    return GlossaryEntry(use.spelling, concept.id, counterpart.singular, use.rendered, note=note)


def _entry(use: TermUse, source: _Side, target: _Side) -> GlossaryEntry | None:
    concept = get_concept(use.concept)
    if concept.id == "matrix_unit":
        return _matrix_entry(use, concept, source, target)
    counterpart_term = concept.preferred(target.backend)
    counterpart = counterpart_term.singular if counterpart_term else None
    note = None if counterpart else concept.absent.get(target.backend)
    caveat = None
    if concept.id in _FACTS and counterpart is not None:
        fact, words, consequence = _FACTS[concept.id]
        target_value, source_value = fact(target), fact(source)
        if target_value is not None:
            note = words(target, target_value)
        if target_value is not None and source_value is not None and source_value != target_value:
            caveat = f"{words(source, source_value)}; {note}: {consequence}"
            if concept.id == "num_warps":
                ratio = target_value / source_value
                caveat = (
                    f"num_warps counts {target_value:g}-lane "
                    f"{_term(get_concept('warp'), target.backend, True)} on {target.name} and "
                    f"{source_value:g}-lane ones on {source.name}: the same num_warps gives "
                    f"{ratio:g}x the threads per program"
                )
        elif use.quantified and target_value is not None and source_value is None:
            caveat = f"the text states a quantity for the source; {note}: {consequence}"
    if counterpart is not None and counterpart.lower() == use.spelling.lower() and not caveat:
        return None  # the same word on both sides, nothing to explain
    if counterpart is None and note is None:
        return None
    return GlossaryEntry(use.spelling, concept.id, counterpart, use.rendered, note, caveat)


def glossary(
    uses: Iterable[TermUse],
    source_backend: str,
    target_backend: str,
    source_chip: Chip | None = None,
    target_chip: Chip | None = None,
) -> list[GlossaryEntry]:
    """Glossary entries for the source terms a lesson uses, in order of first use.

    A term whose counterpart is the same word and whose mapping changes nothing is left out.
    """
    source, target = _Side(source_backend, source_chip), _Side(target_backend, target_chip)
    entries = []
    for use in uses:
        entry = _entry(use, source, target)
        if entry is not None:
            entries.append(entry)
    return entries
