"""Rendering a lesson written for one backend for another: `rendered_text` plus a glossary.

A rendering must not change what the lesson claims. So `rendered_text` replaces only nouns
whose counterpart means the same thing (shared memory -> LDS, tensor cores -> matrix cores,
SM -> CU, thread block -> workgroup; concepts with `renders` in `platforms.concepts`), and an
occurrence stays as written when

- a number is attached to it ("132 SMs", "48 KB of shared memory", "warp of 32"): the number is
  the source chip's, and the glossary says what the target has;
- it is part of code: inside backticks or double quotes, an identifier (`use_shmem`,
  `LOAD=tma`, `cp.async`), or a quoted error message ("OutOfResources: out of resource: shared
  memory, ...") or any span the caller marks verbatim;
- its clause uses an API of the source backend that the target lacks ("use tensor cores via
  wmma" stays, since "matrix cores via wmma" would pair a target unit with a CUDA API);
- the target chip has no such unit (RDNA2 has no matrix unit).

Numbers, identifiers and API names are never rewritten. Everything else (warps, whose width
differs between backends and architectures; instruction, API and tool names) is explained in
the glossary (`platforms.glossary`), never substituted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from tunemem.platforms.backends import BACKENDS
from tunemem.platforms.chips import Chip
from tunemem.platforms.concepts import CONCEPTS, Concept, Term
from tunemem.platforms.glossary import GlossaryEntry, TermUse, glossary
from tunemem.platforms.resolve import resolve


@dataclass(frozen=True)
class RenderedText:
    """A lesson text for the target backend, the substitutions made, and the glossary."""

    text: str
    substitutions: list[tuple[str, str]] = field(default_factory=list)
    glossary: list[GlossaryEntry] = field(default_factory=list)


@dataclass(frozen=True)
class _Spelling:
    concept: Concept
    term: Term
    plural: bool


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid backends: {', '.join(BACKENDS)}")


@cache
def _matcher(source: str) -> tuple[re.Pattern[str], dict[str, _Spelling], dict[str, _Spelling]]:
    """One alternation over the source backend's terms, longest first (exact terms in their
    own case, the others case-insensitively), and lookups for exact and lowercased matches."""
    exact: dict[str, _Spelling] = {}
    folded: dict[str, _Spelling] = {}
    for concept in CONCEPTS:
        for term in concept.terms.get(source, ()):
            for spelling, plural in ((term.singular, False), (term.plural, True)):
                if spelling is None:
                    continue
                if term.exact:
                    exact.setdefault(spelling, _Spelling(concept, term, plural))
                else:
                    folded.setdefault(spelling.lower(), _Spelling(concept, term, plural))
    alternatives = [(s, True) for s in exact] + [(s, False) for s in folded]
    alternatives.sort(key=lambda item: len(item[0]), reverse=True)
    alternation = "|".join(
        re.escape(s) if is_exact else f"(?i:{re.escape(s)})" for s, is_exact in alternatives
    )
    return re.compile(rf"(?<![\w])(?:{alternation})(?![\w])"), exact, folded


_CODE_SPANS = re.compile(r"`[^`]*`|\"[^\"]*\"|“[^”]*”")
_ERROR_START = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Resources|Failure|FailedConfig)\b:")
_EXAMPLE_ERROR = re.compile(r"\berror; example: ")
_CLAUSE_END = re.compile(r"[.;!?](?=\s|$)|\n")
_QUANTITY_BEFORE = re.compile(
    r"\d[\d,.x×]*(?:[\s-]*(?:[KMGT]i?B|bytes?|kilobytes?))?[\s-]*(?:of\s+(?:the\s+)?)?$"
)
_QUANTITY_AFTER = re.compile(
    r"^(?:\s*\(\s*\d[\d,.]*\s*[A-Za-z]{0,8}\s*\)"  # "shared memory (228 KB)"
    r"|\s*(?:size\s+|width\s+|count\s+|capacity\s+)?(?:of\s+|is\s+|=\s*|:\s*)?"
    r"(?:up to\s+|only\s+)?\d)"  # "warp of 32", "SM count 132", "LDS: 64 KB"
)


def _protected_spans(text: str, verbatim: tuple[str, ...]) -> list[tuple[int, int]]:
    spans = [m.span() for m in _CODE_SPANS.finditer(text)]
    for piece in verbatim:
        if piece:
            spans += [(m.start(), m.end()) for m in re.finditer(re.escape(piece), text)]
    for match in _ERROR_START.finditer(text):
        # A quoted compiler or runtime message runs to the end of its parenthesis, if open.
        depth, end = text.count("(", 0, match.start()) - text.count(")", 0, match.start()), -1
        if depth > 0:
            level = 0
            for i in range(match.end(), len(text)):
                level += {"(": 1, ")": -1}.get(text[i], 0)
                if level < 0:
                    end = i
                    break
        spans.append((match.start(), end if end >= 0 else len(text)))
    spans += [(m.end(), len(text)) for m in _EXAMPLE_ERROR.finditer(text)]
    return spans


def _in_code(text: str, start: int, end: int) -> bool:
    """An identifier or a value in code: `LOAD=tma`, `x.SM`, `smem/reg`, `f(SM)`, `a.TMA.b`."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    after2 = text[end + 1] if end + 1 < len(text) else " "
    if before in "=./\\" or after in "=(/":
        return True
    return after == "." and (after2.isalnum() or after2 == "_")


def _quantified(text: str, start: int, end: int) -> bool:
    return bool(_QUANTITY_BEFORE.search(text[max(0, start - 40) : start])) or bool(
        _QUANTITY_AFTER.match(text[end : end + 40])
    )


def _clauses(text: str) -> list[tuple[int, int]]:
    bounds, start = [], 0
    for match in _CLAUSE_END.finditer(text):
        bounds.append((start, match.end()))
        start = match.end()
    bounds.append((start, len(text)))
    return bounds


def _match_case(found: str, listed: str, replacement: str) -> str:
    """Keep the writer's casing: as listed -> target as listed; SHOUTED -> SHOUTED;
    Capitalised (sentence start) -> Capitalised."""
    if found == listed:
        return replacement
    if found.isupper() and len(found) > 1 and not listed.isupper():
        return replacement.upper()
    if found[:1].isupper() and not listed[:1].isupper() and replacement[:1].islower():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _shared_api(spelling: _Spelling, target: str) -> bool:
    """Whether the target backend knows this API name too (HIP has `__syncthreads()`)."""
    return any(t.singular == spelling.term.singular for t in spelling.concept.terms.get(target, ()))


def _as_chip(chip: Chip | str | None, backend: str) -> Chip | None:
    if chip is None or isinstance(chip, Chip):
        resolved = chip
    else:
        resolved = resolve(chip, backend=backend)
    if resolved is not None and resolved.backend != backend:
        raise ValueError(f"chip {resolved.id} is a {resolved.backend} device, not {backend}")
    return resolved


def render(
    text: str,
    source_backend: str,
    target_backend: str,
    *,
    source_chip: Chip | str | None = None,
    target_chip: Chip | str | None = None,
    verbatim: tuple[str, ...] = (),
) -> RenderedText:
    """Render a lesson written for `source_backend` for `target_backend`.

    Args:
        text: the lesson text, in the source backend's words.
        source_backend: backend the lesson was written for ("cuda").
        target_backend: backend to render for ("hip").
        source_chip: the chip the lesson was learned on (a `Chip`, id or device name), when
            known: its descriptor gives the source side of a caveat (164 KB shared memory per
            SM on a100).
        target_chip: the chip the lesson is rendered for: its descriptor gives the target's
            warp width (64 on CDNA, 32 on RDNA), on-chip memory, compute units and matrix unit.
        verbatim: spans of the text to leave as written (an error message from the hint).

    Returns:
        RenderedText with the text, the (found, replacement) substitutions and the glossary;
        the same backend returns the text unchanged with neither.

    Raises:
        ValueError: an unknown backend, or a chip of another backend.
    """
    _check_backend(source_backend)
    _check_backend(target_backend)
    source = _as_chip(source_chip, source_backend)
    target = _as_chip(target_chip, target_backend)
    if source_backend == target_backend:
        return RenderedText(text, [], [])
    pattern, exact, folded = _matcher(source_backend)
    found = []
    for match in pattern.finditer(text):
        spelling = exact.get(match.group(0)) or folded[match.group(0).lower()]
        found.append((match, spelling))
    protected = _protected_spans(text, verbatim)
    bound = [
        (start, end)
        for start, end in _clauses(text)
        if any(
            start <= m.start() < end and s.term.api and not _shared_api(s, target_backend)
            for m, s in found
        )
    ]
    no_matrix_unit = target is not None and target.known and target.matrix_unit is None

    uses: dict[tuple[str, str], TermUse] = {}
    pieces, subs, cursor = [], [], 0
    for match, spelling in found:
        concept, start, end = spelling.concept, match.start(), match.end()
        target_term = concept.preferred(target_backend)
        quantified = _quantified(text, start, end)
        renders = (
            concept.renders
            and not spelling.term.api
            and target_term is not None
            and not target_term.api
            and not quantified
            and not _in_code(text, start, end)
            and not any(a <= start < b for a, b in protected)
            and not any(a <= start < b for a, b in bound)
            and not (concept.id == "matrix_unit" and no_matrix_unit)
        )
        new = match.group(0)
        if renders and target_term is not None:
            listed = spelling.term.plural if spelling.plural else spelling.term.singular
            replacement = (
                (target_term.plural or target_term.singular)
                if spelling.plural
                else target_term.singular
            )
            new = _match_case(match.group(0), listed or "", replacement)
            if (
                new[:1].islower()
                and match.group(0)[:1].isupper()
                and (not text[:start].strip() or re.search(r"[.!?]\s+$", text[:start]))
            ):
                new = new[:1].upper() + new[1:]  # sentence start
            if new != match.group(0):
                subs.append((match.group(0), new))
            pieces += [text[cursor:start], new]
            cursor = end
        key = (concept.id, spelling.term.singular.lower())
        previous = uses.get(key)
        uses[key] = TermUse(
            concept.id,
            previous.spelling if previous else match.group(0),
            (previous.rendered if previous else False) or new != match.group(0),
            (previous.quantified if previous else False) or quantified,
        )
    pieces.append(text[cursor:])
    entries = glossary(uses.values(), source_backend, target_backend, source, target)
    return RenderedText("".join(pieces), subs, entries)
