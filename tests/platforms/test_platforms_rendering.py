"""Rendering must not change what a lesson claims: a table-driven test over real lesson texts for
every backend pair, and the cases of issue 14 one by one.

Real texts are the distilled lessons of the bundled samples (`ingest/samples`), of the H200
trajectories in `bench/results/h200`, and of `../shared/data` (its vLLM and KernelBench files and
one Kernel Tuner kernel; skipped when absent). Backends
without recorded lessons (Ascend, CPU) get the CUDA texts rendered into their words as sources.
The hand-written texts are the examples of issue 14, labelled as such.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from tunemem.platforms import BACKENDS, all_chips, get_chip, render
from tunemem.platforms.concepts import CONCEPTS

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"

# Examples of issue 14 (hand-written, not measured): what a rendering used to get wrong.
ISSUE_TEXTS = (
    "each warp of 32 threads reads a 128-byte segment, so a row of 4-byte floats is coalesced",
    "Launch 32x8 thread blocks and use tensor cores via wmma for the 16x16x16 tiles.",
    "Stage the tiles in shared memory and sync with __syncthreads(); tensor cores need 16-wide "
    "tiles; keep one warp per SM row.",
    "With 48 KB of shared memory per block, only 4 thread blocks fit on one SM (132 SMs on H200).",
    "Use cp.async into shared memory; tensor cores do the GEMM; profile with ncu.",
)

# Target chips per backend: None (backend only) and chips whose descriptors differ.
TARGET_CHIPS = {
    "cuda": (None, "h200", "t4"),
    "hip": (None, "mi300x", "w6600", "radeon-8060s"),
    "ascend": (None, "ascend-910b"),
    "xpu": (None, "arc-pro-b70"),
    "cpu": (None, "x86-cpu"),
}

# Phrases a rendering must never add (they may appear only as often as the source has them).
KNOWN_BAD = (
    r"vector unit lanes",
    r"one per AI Core",
    r"program instances?",
    r"AMX/VNNI",
    r"L1/L2 cache",
    r"(?i)(?:matrix cores?|cube units?|xmx engines?|ai cores?|cus?) via (?:wmma|mma)",
    r"(?i)\b(?:wavefronts?|waves?|sub-groups?|SIMD vectors?) of \d+",
    r"(?i)\b\d+ (?:threads|lanes)\b",
)
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
IDENTIFIER = re.compile(r"`[^`]+`|\b\w+=[^\s,;)]+|\b[A-Za-z_]\w*(?:[._]\w+)+(?:\(\))?")
API_NAMES = sorted(
    {t.singular for c in CONCEPTS for terms in c.terms.values() for t in terms if t.api},
    key=len,
    reverse=True,
)
API = re.compile(r"(?<![\w])(?:" + "|".join(re.escape(a) for a in API_NAMES) + r")(?![\w])")


def _distilled(paths: list[Path]) -> list[tuple[str, str | None, str]]:
    """(backend, source chip, text) of every lesson distilled from these sources."""
    from tunemem.ingest.distill import distill
    from tunemem.ingest.readers import read_any
    from tunemem.ingest.records import TrajectoryRecord

    seen, texts = set(), []
    for record in read_any(paths):
        if not isinstance(record, TrajectoryRecord):
            continue
        for draft in distill(record):
            if draft.text in seen:
                continue
            seen.add(draft.text)
            chips = draft.applicability.get("chips") or [None]
            texts.append((record.context.backend, chips[0], draft.text))
    return texts


@cache
def corpus(name: str) -> tuple[tuple[str, str | None, str], ...]:
    if name == "samples":
        from tunemem.ingest.samples import sample_paths

        return tuple(_distilled(sample_paths()))
    if name == "h200":
        return tuple(_distilled([REPO / "bench" / "results" / "h200"]))
    if name == "shared":
        # Every vLLM and KernelBench file, and one Kernel Tuner kernel: the other Kernel Tuner
        # caches distil to texts of the same shape and take ten seconds to read.
        folders = ("vllm_fused_moe", "kernelbench_timings", "kerneltuner/pnpoly")
        return tuple(_distilled([SHARED / folder for folder in folders]))
    return tuple(("cuda", None, text) for text in ISSUE_TEXTS)


def _sources(name: str, backend: str) -> list[tuple[str | None, str]]:
    """Texts in `backend`'s words: recorded there, or CUDA texts rendered into them."""
    texts = [(chip, text) for b, chip, text in corpus(name) if b == backend]
    if backend != "cuda" and not texts:
        texts = [(None, render(t, "cuda", backend).text) for b, _, t in corpus(name) if b == "cuda"]
    return texts


def _assert_faithful(source: str, rendered, target: str) -> None:  # type: ignore[no-untyped-def]
    text = rendered.text
    if text == source:
        assert not rendered.substitutions
        return
    assert Counter(NUMBER.findall(text)) == Counter(NUMBER.findall(source)), (source, text)
    assert Counter(IDENTIFIER.findall(text)) == Counter(IDENTIFIER.findall(source)), (source, text)
    assert Counter(API.findall(text)) == Counter(API.findall(source)), (source, text)
    for bad in KNOWN_BAD:
        assert len(re.findall(bad, text)) <= len(re.findall(bad, source)), (bad, source, text)
    for found, new in rendered.substitutions:
        named = [
            e
            for e in rendered.glossary
            if e.rendered and e.counterpart and e.counterpart.lower().rstrip("s") in new.lower()
        ]
        assert named, f"{found!r} -> {new!r} is not in the glossary {rendered.glossary}"
    # Outside the substituted nouns the text is unchanged: undoing them, left to right, gives
    # the source back exactly.
    undone, cursor = text, 0
    for found, new in rendered.substitutions:
        at = undone.index(new, cursor)
        undone = undone[:at] + found + undone[at + len(new) :]
        cursor = at + len(found)
    assert undone == source, (source, text)


PAIRS = [(s, t) for s in BACKENDS for t in BACKENDS if s != t]


@pytest.mark.parametrize("name", ["issue", "samples", "h200", "shared"])
@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[f"{s}-{t}" for s, t in PAIRS])
def test_rendering_keeps_numbers_identifiers_and_claims(
    name: str, source: str, target: str
) -> None:
    if name == "shared" and not SHARED.is_dir():
        pytest.skip(f"shared data directory {SHARED} is absent")
    texts = _sources(name, source)
    assert texts, f"no {name} texts for {source}"
    for chip, text in texts:
        source_chip = chip if chip and not chip.startswith("unknown") else None
        # The large corpus against one chip per backend; the small ones against all of them.
        chips = TARGET_CHIPS[target][1:2] if name == "shared" else TARGET_CHIPS[target]
        for target_chip in chips:
            rendered = render(
                text, source, target, source_chip=source_chip, target_chip=target_chip
            )
            _assert_faithful(text, rendered, target)


def test_every_target_chip_is_known_and_of_its_backend() -> None:
    known = {chip.id for chip in all_chips()}
    for backend, chips in TARGET_CHIPS.items():
        for chip in chips[1:]:
            assert chip in known and get_chip(chip).backend == backend  # type: ignore[arg-type]


def _entry(rendered, term: str):  # type: ignore[no-untyped-def]
    return next(e for e in rendered.glossary if e.term == term)


def test_warp_arithmetic_is_kept_and_the_width_explained() -> None:
    text = ISSUE_TEXTS[0]
    on_cdna = render(text, "cuda", "hip", source_chip="a100", target_chip="mi300x")
    assert on_cdna.text == text and on_cdna.substitutions == []
    warp = _entry(on_cdna, "warp")
    assert (warp.counterpart, warp.rendered) == ("wavefront", False)
    assert warp.note == "a wavefront on mi300x is 64 lanes"
    assert warp.caveat is not None and "a100 is 32 lanes" in warp.caveat
    # RDNA runs HIP in wave32: same width, nothing to warn about.
    on_rdna = _entry(render(text, "cuda", "hip", target_chip="w6600"), "warp")
    assert on_rdna.note == "a wavefront on w6600 is 32 lanes" and on_rdna.caveat is None


def test_unambiguous_nouns_render() -> None:
    rendered = render(ISSUE_TEXTS[2], "cuda", "hip", target_chip="mi300x")
    assert rendered.text == (
        "Stage the tiles in LDS and sync with __syncthreads(); matrix cores need 16-wide "
        "tiles; keep one warp per CU row."
    )
    assert rendered.substitutions == [
        ("shared memory", "LDS"),
        ("tensor cores", "matrix cores"),
        ("SM", "CU"),
    ]
    assert [e.term for e in rendered.glossary] == ["shared memory", "tensor cores", "warp", "SM"]
    assert _entry(rendered, "tensor cores").note == "mi300x: Matrix Cores (MFMA)"
    back = render(rendered.text, "hip", "cuda")
    assert back.text == ISSUE_TEXTS[2].replace("tensor cores", "tensor cores")


def test_source_apis_and_numbers_hold_their_nouns() -> None:
    text = ISSUE_TEXTS[1]
    for target in ("hip", "ascend", "xpu", "cpu"):
        assert render(text, "cuda", target).text == text, target
    ascend = render(text, "cuda", "ascend", target_chip="ascend-910b")
    block = _entry(ascend, "thread blocks")
    assert block.counterpart is None and "one AI Core" in (block.note or "")
    assert _entry(ascend, "wmma").counterpart == "Mmad"
    quantities = render(ISSUE_TEXTS[3], "cuda", "hip", source_chip="h200", target_chip="mi300x")
    assert quantities.text == ISSUE_TEXTS[3].replace("one SM", "one CU")
    units = _entry(quantities, "SM")
    assert units.caveat == (
        "h200 has 132 SMs; mi300x has 304 CUs: counts, grid sizes and waves of blocks in the "
        "text are the source's"
    )
    memory = _entry(quantities, "shared memory")
    assert not memory.rendered and memory.caveat is not None
    assert (
        "228 KB of shared memory per SM" in memory.caveat and "64 KB of LDS per CU" in memory.caveat
    )


def test_num_warps_caveat_counts_threads() -> None:
    text = "the fastest is BLOCK_M=64, num_warps=4 at 2.04 ms"
    rendered = render(text, "cuda", "hip", source_chip="h200", target_chip="mi300x")
    assert rendered.text == text
    assert _entry(rendered, "num_warps").caveat == (
        "num_warps counts 64-lane wavefronts on mi300x and 32-lane ones on h200: the same "
        "num_warps gives 2x the threads per program"
    )
    assert not [e for e in render(text, "cuda", "hip", target_chip="w6600").glossary]


def test_chip_without_matrix_unit() -> None:
    rendered = render("tensor cores do the GEMM", "cuda", "hip", target_chip="w6600")
    assert rendered.text == "tensor cores do the GEMM"
    entry = _entry(rendered, "tensor cores")
    assert entry.counterpart is None and "w6600 (amd-rdna2) has no matrix unit" in (
        entry.caveat or ""
    )
    assert render("tensor cores do the GEMM", "cuda", "hip", target_chip="radeon-8060s").text == (
        "matrix cores do the GEMM"
    )


def test_recorded_error_messages_and_values_stay_verbatim() -> None:
    failure = next(t for _, _, t in corpus("h200") if "OutOfResources" in t)
    rendered = render(failure, "cuda", "hip", source_chip="h200", target_chip="mi300x")
    assert "out of resource: shared memory, Required: 262176" in rendered.text
    assert "LOAD=tma" in rendered.text
    assert _entry(rendered, "shared memory").rendered is False
    hint_message = "illegal memory access in shared memory"
    text = f"fails: {hint_message}. Use less shared memory."
    marked = render(text, "cuda", "hip", verbatim=(hint_message,))
    assert marked.text == f"fails: {hint_message}. Use less LDS."


def test_words_cases_and_backends() -> None:
    assert render("SMEM SMs SMALL smx num_warps=4; SM-level", "cuda", "hip").text == (
        "LDS CUs SMALL smx num_warps=4; CU-level"
    )
    assert render("Shared memory first.", "cuda", "hip").text == "LDS first."
    assert render("LDS first. LDS is small", "hip", "cuda").text == (
        "Shared memory first. Shared memory is small"
    )
    same = render(ISSUE_TEXTS[2], "cuda", "cuda", target_chip="h200")
    assert same.text == ISSUE_TEXTS[2] and same.substitutions == [] and same.glossary == []
    with pytest.raises(ValueError, match="valid backends"):
        render("x", "cuda", "opencl")
    with pytest.raises(ValueError, match=r"mi300x \(hip\)"):
        render("x", "cuda", "ascend", target_chip="mi300x")
