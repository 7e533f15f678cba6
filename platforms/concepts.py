"""Concept map between backends, and rendering of lesson text from one backend's terms into
another's (CUDA shared memory <-> HIP LDS <-> Ascend Unified Buffer, warp <-> wavefront, ...).

Rendering is a whole-word, case-preserving substitution of each concept's source-backend terms
by the target backend's preferred term (the first one listed). A number is changed only where
it is explicitly the warp width ("warp of 32", "32 threads", "warp size 32") and both backends
have a fixed width. Anything else is left as written: the service marks rendered lessons as
transferred, so a reader knows the words were mapped, not the advice re-validated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from platforms.backends import BACKENDS, get_backend


@dataclass(frozen=True)
class Term:
    """One way a backend names a concept; `plural` None means the term does not inflect."""

    singular: str
    plural: str | None = None


@dataclass(frozen=True)
class Concept:
    """A hardware/programming concept with each backend's terms (first term is preferred)."""

    id: str
    description: str
    terms: dict[str, tuple[Term, ...]]


def _t(singular: str, plural: str | None = None) -> Term:
    return Term(singular, plural)


def _s(singular: str) -> Term:
    """A term whose plural adds an "s"."""
    return Term(singular, singular + "s")


CONCEPTS: tuple[Concept, ...] = (
    Concept(
        "shared_memory",
        "fast on-chip memory shared by one block/workgroup",
        {
            "cuda": (_t("shared memory"), _t("smem"), _t("SMEM")),
            "hip": (_t("LDS"), _t("local data share")),
            "ascend": (_t("Unified Buffer (UB)"), _t("Unified Buffer"), _t("UB")),
            "xpu": (_t("shared local memory (SLM)"), _t("shared local memory"), _t("SLM")),
            "cpu": (_t("L1/L2 cache"),),
        },
    ),
    Concept(
        "warp",
        "the lock-step group of threads that executes one instruction",
        {
            "cuda": (_s("warp"),),
            "hip": (_s("wavefront"), _s("wave")),
            "ascend": (_t("vector unit lanes"),),
            "xpu": (_s("sub-group"), _s("subgroup")),
            "cpu": (_t("SIMD vector", "SIMD vectors"),),
        },
    ),
    Concept(
        "warp_shuffle",
        "exchange of registers between lanes of one warp",
        {
            "cuda": (_s("warp shuffle"), _t("__shfl_xor_sync"), _t("__shfl_sync")),
            "hip": (
                _t("wavefront cross-lane operation", "wavefront cross-lane operations"),
                _t("__shfl_xor"),
                _t("__shfl"),
                _t("DPP"),
            ),
            "ascend": (_s("vector reduction instruction"),),
            "xpu": (_s("sub-group shuffle"),),
            "cpu": (_s("SIMD shuffle"),),
        },
    ),
    Concept(
        "matrix_unit",
        "dedicated matrix-multiply-accumulate hardware",
        {
            "cuda": (_s("tensor core"), _s("Tensor Core")),
            "hip": (_s("matrix core"), _t("MFMA")),
            "ascend": (_t("Cube unit", "Cube units"), _t("Cube")),
            "xpu": (_s("XMX engine"), _t("XMX")),
            "cpu": (_t("AMX/VNNI unit", "AMX/VNNI units"),),
        },
    ),
    Concept(
        "compute_unit",
        "the processor that runs blocks/workgroups",
        {
            "cuda": (_t("SM", "SMs"), _s("streaming multiprocessor")),
            "hip": (_t("CU", "CUs"), _s("compute unit")),
            "ascend": (_t("AI Core", "AI Cores"),),
            "xpu": (_t("Xe core", "Xe cores"),),
            "cpu": (_t("CPU core", "CPU cores"),),
        },
    ),
    Concept(
        "thread_block",
        "the group of threads scheduled together on one compute unit",
        {
            "cuda": (_s("thread block"), _t("CTA", "CTAs")),
            "hip": (_s("workgroup"), _s("work-group")),
            "ascend": (_t("block (one per AI Core)", "blocks (one per AI Core)"),),
            "xpu": (_s("work-group"),),
            "cpu": (_s("program instance"),),
        },
    ),
    Concept(
        "block_barrier",
        "barrier among the threads of one block",
        {
            "cuda": (_t("__syncthreads()"), _t("__syncthreads")),
            "hip": (_t("__syncthreads()"), _t("__syncthreads"), _t("s_barrier")),
            "ascend": (_t("pipe barrier (PipeBarrier)"), _t("PipeBarrier"), _t("pipe barrier")),
            "xpu": (_t("group barrier"),),
            "cpu": (_t("thread barrier"),),
        },
    ),
    Concept(
        "async_copy",
        "asynchronous copy from global to on-chip memory",
        {
            "cuda": (_t("cp.async"), _t("TMA"), _t("Tensor Memory Accelerator")),
            "hip": (_t("direct-to-LDS buffer_load"), _t("buffer_load")),
            "ascend": (_t("MTE (memory transfer engine)"), _t("MTE"), _t("memory transfer engine")),
            "xpu": (_t("2D block load", "2D block loads"),),
            "cpu": (_t("software prefetch"),),
        },
    ),
    Concept(
        "registers",
        "per-thread register file",
        {
            "cuda": (_s("register"),),
            "hip": (_t("VGPR", "VGPRs"), _s("vector register")),
            "ascend": (_s("register"),),
            "xpu": (_t("GRF", "GRFs"), _s("register")),
            "cpu": (_t("vector register", "vector registers"),),
        },
    ),
    Concept(
        "occupancy",
        "resident warps per compute unit relative to the maximum",
        {
            "cuda": (_t("occupancy"),),
            "hip": (_t("occupancy"),),
            "ascend": (_t("AI Core utilisation"),),
            "xpu": (_t("occupancy"),),
            "cpu": (_t("core utilisation"),),
        },
    ),
    Concept(
        "global_memory",
        "off-chip device memory (HBM/GDDR)",
        {
            "cuda": (_t("global memory"),),
            "hip": (_t("global memory"),),
            "ascend": (_t("Global Memory (GM)"), _t("Global Memory"), _t("GM")),
            "xpu": (_t("global memory"),),
            "cpu": (_t("main memory"),),
        },
    ),
    Concept(
        "l2_cache",
        "last on-chip cache level shared by all compute units",
        {
            "cuda": (_t("L2 cache"), _t("L2")),
            "hip": (_t("L2 cache"), _t("L2"), _t("Infinity Cache")),
            "ascend": (_t("L2 cache"), _t("L2")),
            "xpu": (_t("L2 cache"), _t("L2")),
            "cpu": (_t("last-level cache"), _t("LLC")),
        },
    ),
    Concept(
        "num_warps",
        "Triton's launch parameter for warps (wavefronts on AMD) per program",
        {backend: (_t("num_warps"),) for backend in ("cuda", "hip", "xpu", "cpu")},
    ),
    Concept(
        "stream",
        "ordered queue of device work",
        {
            "cuda": (_t("CUDA stream", "CUDA streams"),),
            "hip": (_t("HIP stream", "HIP streams"),),
            "ascend": (_t("ACL stream", "ACL streams"),),
            "xpu": (_t("SYCL queue", "SYCL queues"),),
        },
    ),
    Concept(
        "profiler",
        "kernel-level profiler",
        {
            "cuda": (_t("Nsight Compute"), _t("ncu")),
            "hip": (_t("rocprof"),),
            "ascend": (_t("msprof"),),
            "xpu": (_t("VTune"),),
            "cpu": (_t("perf"),),
        },
    ),
    Concept(
        "compiler",
        "device-code compiler driver",
        {
            "cuda": (_t("nvcc"),),
            "hip": (_t("hipcc"),),
            "xpu": (_t("icpx"),),
        },
    ),
)


@dataclass(frozen=True)
class RenderedText:
    """A lesson text in the target backend's terms and the substitutions made."""

    text: str
    substitutions: list[tuple[str, str]] = field(default_factory=list)


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid backends: {', '.join(BACKENDS)}")


@cache
def _matcher(source: str, target: str) -> tuple[re.Pattern[str], dict[str, tuple[str, str]]]:
    """One alternation over every source term (longest first), and a map from a term's
    lowercase form to (its listed spelling, the target's term)."""
    replacement: dict[str, tuple[str, str]] = {}
    for concept in CONCEPTS:
        source_terms, target_terms = concept.terms.get(source), concept.terms.get(target)
        if not source_terms or not target_terms:
            continue
        preferred = target_terms[0]
        for term in source_terms:
            replacement.setdefault(term.singular.lower(), (term.singular, preferred.singular))
            if term.plural:
                target_plural = preferred.plural or preferred.singular
                replacement.setdefault(term.plural.lower(), (term.plural, target_plural))
    spellings = sorted(replacement, key=len, reverse=True)
    alternation = "|".join(re.escape(s) for s in spellings)
    # Whole words: no letter, digit or underscore on either side (dots and dashes inside terms).
    pattern = re.compile(rf"(?<![\w])({alternation})(?![\w])", re.IGNORECASE)
    return pattern, replacement


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


def _adjust_warp_width(
    text: str, source_width: int, target_width: int, subs: list[tuple[str, str]]
) -> str:
    """Change the warp width only where the text states it as the warp width."""
    n = str(source_width)
    unit = r"(?:warps?|wavefronts?|waves?|sub-?groups?)"
    patterns = (
        rf"\b{unit}\s+(?:size\s+)?(?:of\s+)?{n}\b",  # "warp of 32", "warp size of 32"
        rf"\b{n}[- ]thread\s+{unit}",  # "32-thread warp"
        rf"\b{n}\s+threads\b",  # "32 threads"
        rf"\b{n}\s+lanes\b",  # "32 lanes"
    )

    def swap(match: re.Match[str]) -> str:
        old = match.group(0)
        new = re.sub(rf"\b{n}\b", str(target_width), old)
        subs.append((old, new))
        return new

    for pattern in patterns:
        text = re.sub(pattern, swap, text, flags=re.IGNORECASE)
    return text


def render(
    text: str, source_backend: str, target_backend: str, target_warp_size: int | None = None
) -> RenderedText:
    """Rewrite a lesson written for `source_backend` in `target_backend`'s terms.

    Args:
        text: the lesson text.
        source_backend: backend the lesson was written for ("cuda").
        target_backend: backend to render for ("hip").
        target_warp_size: the target chip's warp width when it differs from the backend's
            usual one (RDNA GPUs run HIP in wave32); defaults to the backend's.

    Returns:
        RenderedText; same backend returns the text unchanged with no substitutions.
    """
    _check_backend(source_backend)
    _check_backend(target_backend)
    if source_backend == target_backend:
        return RenderedText(text, [])
    subs: list[tuple[str, str]] = []
    source_width = get_backend(source_backend).warp_size
    target_width = target_warp_size or get_backend(target_backend).warp_size
    if source_width and target_width and source_width != target_width:
        text = _adjust_warp_width(text, source_width, target_width, subs)
    pattern, replacement = _matcher(source_backend, target_backend)

    def substitute(match: re.Match[str]) -> str:
        found = match.group(0)
        listed, target_term = replacement[found.lower()]
        new = _match_case(found, listed, target_term)
        before = match.string[: match.start()]
        if new[:1].islower() and (not before.strip() or re.search(r"[.!?]\s+$", before)):
            new = new[:1].upper() + new[1:]  # sentence start
        if new != found:
            subs.append((found, new))
        return new

    return RenderedText(pattern.sub(substitute, text), subs)


# Launch parameters that only one backend's Triton understands.
_BACKEND_ONLY_PARAMS: dict[str, frozenset[str]] = {
    "hip": frozenset({"waves_per_eu", "matrix_instr_nonkdim", "kpack", "SPLIT_K_AMD"}),
    "cuda": frozenset({"num_ctas", "maxnreg", "num_consumer_groups", "num_buffers_warp_spec"}),
}


def translate_params(
    params: dict[str, object], source_backend: str, target_backend: str
) -> dict[str, object]:
    """Carry a structured hint (launch/tuning parameters) from one backend to another.

    Triton and Kernel Tuner parameters mean the same on every backend (num_warps counts warps
    on CUDA and wavefronts on HIP), so values are kept as they are; parameters that only the
    source backend's compiler understands (e.g. AMD's waves_per_eu, CUDA's maxnreg) are
    dropped, because the target would reject or ignore them. Nothing is invented.
    """
    _check_backend(source_backend)
    _check_backend(target_backend)
    if source_backend == target_backend:
        return dict(params)
    source_only = _BACKEND_ONLY_PARAMS.get(source_backend, frozenset())
    target_known = _BACKEND_ONLY_PARAMS.get(target_backend, frozenset())
    return {k: v for k, v in params.items() if k not in source_only or k in target_known}


def concept_table(backends: tuple[str, ...] = BACKENDS) -> list[dict[str, str]]:
    """The concept map as rows {"concept", "description", <backend>: preferred term}."""
    rows = []
    for concept in CONCEPTS:
        row = {"concept": concept.id, "description": concept.description}
        for backend in backends:
            terms = concept.terms.get(backend)
            row[backend] = terms[0].singular if terms else ""
        rows.append(row)
    return rows
