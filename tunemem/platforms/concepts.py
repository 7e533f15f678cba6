"""Concept map between backends: how each backend names the same hardware or programming idea
(CUDA shared memory <-> HIP LDS <-> Ascend Unified Buffer, warp <-> wavefront, ...), and the
translation of structured hints (launch parameters) between backends.

Each concept says whether its nouns may be substituted in a transferred lesson's text
(`renders`): only concepts whose counterpart means the same thing without a quantity attached
do (shared memory, matrix unit, compute unit, thread block, global memory, stream). The others
(warp, whose width differs; API, instruction and tool names) are explained in the glossary only,
see `platforms.rendering`. A term flagged `api` is an identifier, API, instruction or tool
name: it is never rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tunemem.platforms.backends import BACKENDS


@dataclass(frozen=True)
class Term:
    """One way a backend names a concept.

    `plural` None means the term does not inflect. `exact` terms (acronyms such as "SM",
    "TMA") match only in the spelling given, so "LOAD=tma" or "sm" in prose never match.
    """

    singular: str
    plural: str | None = None
    api: bool = False
    exact: bool = False


@dataclass(frozen=True)
class Concept:
    """A hardware/programming concept with each backend's terms (first non-API term is the
    one a rendering uses); `absent` says what a backend has instead where it has no
    counterpart."""

    id: str
    description: str
    terms: dict[str, tuple[Term, ...]]
    renders: bool = False
    absent: dict[str, str] = field(default_factory=dict)

    def preferred(self, backend: str) -> Term | None:
        """The backend's term a rendering or glossary uses (its first noun, else its first)."""
        terms = self.terms.get(backend) or ()
        nouns = [t for t in terms if not t.api]
        return nouns[0] if nouns else (terms[0] if terms else None)


def _n(singular: str, plural: str | None = None) -> Term:
    """A noun; `plural` None adds an "s"."""
    return Term(singular, plural or singular + "s", exact=singular.isupper())


def _u(singular: str) -> Term:
    """A noun that does not inflect ("shared memory", "LDS")."""
    return Term(singular, None, exact=singular.isupper())


def _api(spelling: str) -> Term:
    """An API, identifier, instruction or tool name: matched as written, never rewritten."""
    return Term(spelling, None, api=True, exact=True)


CONCEPTS: tuple[Concept, ...] = (
    Concept(
        "shared_memory",
        "fast on-chip memory shared by one block/workgroup",
        {
            "cuda": (_u("shared memory"), _u("smem"), _u("SMEM")),
            "hip": (_u("LDS"), _u("local data share")),
            "ascend": (_u("Unified Buffer (UB)"), _u("Unified Buffer"), _u("UB")),
            "xpu": (_u("shared local memory (SLM)"), _u("shared local memory"), _u("SLM")),
        },
        renders=True,
        absent={"cpu": "no software-managed on-chip memory: tiles stay in the L1/L2 caches"},
    ),
    Concept(
        "warp",
        "the lock-step group of threads that executes one instruction",
        {
            "cuda": (_n("warp"),),
            "hip": (_n("wavefront"), _n("wave")),
            "xpu": (_n("sub-group"), _n("subgroup")),
        },
        absent={
            "ascend": "no warps: Ascend C vector instructions work on whole tiles in the "
            "Unified Buffer",
            "cpu": "no warps: a Triton-CPU program runs on one thread, vectorised with the "
            "CPU's SIMD width",
        },
    ),
    Concept(
        "warp_shuffle",
        "exchange of registers between lanes of one warp",
        {
            "cuda": (
                _n("warp shuffle"),
                _api("__shfl_xor_sync"),
                _api("__shfl_down_sync"),
                _api("__shfl_sync"),
            ),
            "hip": (
                _n("cross-lane operation"),
                _api("__shfl_xor"),
                _api("__shfl_down"),
                _api("__shfl"),
                _api("DPP"),
            ),
            "ascend": (_n("vector reduction instruction"),),
            "xpu": (_n("sub-group shuffle"),),
            "cpu": (_n("SIMD shuffle"),),
        },
    ),
    Concept(
        "matrix_unit",
        "dedicated matrix-multiply-accumulate hardware",
        {
            "cuda": (_n("tensor core"), _n("Tensor Core")),
            "hip": (_n("matrix core"), _n("Matrix Core")),
            "ascend": (_n("Cube unit"), _n("Cube Unit")),
            "xpu": (_n("XMX engine"), _u("XMX")),
        },
        renders=True,
        absent={"cpu": "no matrix unit recorded: AMX or VNNI where the CPU model has them"},
    ),
    Concept(
        "matrix_api",
        "the API or instructions that drive the matrix unit",
        {
            "cuda": (_api("wmma"), _api("WMMA"), _api("mma.sync"), _api("wgmma"), _api("ldmatrix")),
            "hip": (_api("rocWMMA"), _api("MFMA")),
            "ascend": (_api("Mmad"),),
            "xpu": (_api("joint_matrix"),),
        },
        absent={"cpu": "no matrix API recorded: it depends on the CPU model (AMX, VNNI)"},
    ),
    Concept(
        "compute_unit",
        "the processor that runs blocks/workgroups",
        {
            "cuda": (_n("SM"), _n("streaming multiprocessor")),
            "hip": (_n("CU"), _n("compute unit")),
            "ascend": (_n("AI Core"),),
            "xpu": (_n("Xe core"),),
            "cpu": (_n("CPU core"),),
        },
        renders=True,
    ),
    Concept(
        "thread_block",
        "the group of threads scheduled together on one compute unit",
        {
            "cuda": (_n("thread block"), _n("CTA")),
            "hip": (_n("workgroup"), _n("work-group")),
            "xpu": (_n("work-group"), _n("workgroup")),
        },
        renders=True,
        absent={
            "ascend": "no thread blocks: an Ascend C kernel runs blockDim blocks, each on one "
            "AI Core, with no threads inside a block",
            "cpu": "no thread blocks: a Triton-CPU program runs on one CPU thread",
        },
    ),
    Concept(
        "block_barrier",
        "barrier among the threads of one block",
        {
            "cuda": (_api("__syncthreads()"), _api("__syncthreads")),
            "hip": (_api("__syncthreads()"), _api("__syncthreads"), _api("s_barrier")),
            "ascend": (_n("pipe barrier"), _api("PipeBarrier")),
            "xpu": (_n("group barrier"), _api("group_barrier")),
            "cpu": (_n("thread barrier"),),
        },
    ),
    Concept(
        "async_copy",
        "asynchronous copy from global to on-chip memory",
        {
            "cuda": (_api("cp.async"), _n("TMA"), _u("Tensor Memory Accelerator")),
            "hip": (_n("direct-to-LDS load"), _api("buffer_load")),
            "ascend": (_u("MTE (memory transfer engine)"), _u("MTE"), _u("memory transfer engine")),
            "xpu": (_n("2D block load"),),
            "cpu": (_u("software prefetch"),),
        },
    ),
    Concept(
        "registers",
        "per-thread register file",
        {
            "cuda": (_n("register"),),
            "hip": (_n("VGPR"), _n("vector register")),
            "xpu": (_n("GRF"), _n("register")),
            "cpu": (_n("vector register"),),
        },
    ),
    Concept(
        "occupancy",
        "resident warps per compute unit relative to the maximum",
        {backend: (_u("occupancy"),) for backend in ("cuda", "hip", "xpu")},
    ),
    Concept(
        "global_memory",
        "off-chip device memory (HBM/GDDR)",
        {
            "cuda": (_u("global memory"),),
            "hip": (_u("global memory"),),
            "ascend": (_u("Global Memory (GM)"), _u("Global Memory"), _u("GM")),
            "xpu": (_u("global memory"),),
            "cpu": (_u("main memory"),),
        },
        renders=True,
    ),
    Concept(
        "l2_cache",
        "last on-chip cache level shared by all compute units",
        {
            "cuda": (_u("L2 cache"), _u("L2")),
            "hip": (_u("L2 cache"), _u("L2")),
            "ascend": (_u("L2 cache"), _u("L2")),
            "xpu": (_u("L2 cache"), _u("L2")),
            "cpu": (_u("last-level cache"), _u("LLC")),
        },
    ),
    Concept(
        "num_warps",
        "Triton's launch parameter for warps (wavefronts on AMD) per program",
        {backend: (_api("num_warps"),) for backend in ("cuda", "hip", "xpu", "cpu")},
        absent={"ascend": "no counterpart recorded: Ascend C kernels have no warps"},
    ),
    Concept(
        "stream",
        "ordered queue of device work",
        {
            "cuda": (_n("CUDA stream"),),
            "hip": (_n("HIP stream"),),
            "ascend": (_n("ACL stream"),),
            "xpu": (_n("SYCL queue"),),
        },
        renders=True,
        absent={"cpu": "no device queue: a CPU kernel runs in the calling thread's order"},
    ),
    Concept(
        "profiler",
        "kernel-level profiler",
        {
            "cuda": (_api("Nsight Compute"), _api("ncu")),
            "hip": (_api("rocprof"),),
            "ascend": (_api("msprof"),),
            "xpu": (_api("VTune"),),
            "cpu": (_api("perf"),),
        },
    ),
    Concept(
        "compiler",
        "device-code compiler driver",
        {
            "cuda": (_api("nvcc"),),
            "hip": (_api("hipcc"),),
            "xpu": (_api("icpx"),),
        },
    ),
)


def get_concept(concept_id: str) -> Concept:
    """The concept with this id; KeyError naming the valid ids otherwise."""
    for concept in CONCEPTS:
        if concept.id == concept_id:
            return concept
    raise KeyError(
        f"unknown concept {concept_id!r}; valid concepts: {', '.join(c.id for c in CONCEPTS)}"
    )


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid backends: {', '.join(BACKENDS)}")


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
            term = concept.preferred(backend)
            row[backend] = term.singular if term else ""
        rows.append(row)
    return rows
