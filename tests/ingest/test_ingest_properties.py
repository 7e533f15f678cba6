"""Property tests over every ingest reader and the distiller (issue 11, "checks that keep it so").

Hypothesis writes synthetic files of each format, near the real shape but with any field
possibly replaced by arbitrary JSON (NaN, infinities, huge integers, nesting, wrong types),
and checks, per file:

- a reader raises nothing but a `ReaderError` (with a reason), and yields only trajectories
  and rejects with reasons;
- `read_any` raises nothing, and every trajectory it yields passes `record_problem` and is
  strict JSON;
- `distill` returns lesson drafts that are strict JSON, or raises `DistillError`;
- each file is done within the deadline.

The runs are bounded (explicit `max_examples`, `deadline`) and derandomized, so CI is fast
and repeatable; raise `max_examples` locally to search harder.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tunemem.ingest.distill import distill
from tunemem.ingest.errors import DistillError, ReaderError
from tunemem.ingest.readers import get_reader, read_any
from tunemem.ingest.records import (
    AttemptRecord,
    ContextSpec,
    RejectedRecord,
    TaskSpec,
    TrajectoryRecord,
)
from tunemem.ingest.validate import record_problem

BOUNDED = settings(
    max_examples=40,
    deadline=timedelta(seconds=5),
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8))
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
LATENCY = st.one_of(
    st.floats(), st.sampled_from([0.0, 1e-300, 5e-324, 1e308, 1.7e308, 0.5, 2.0]), st.integers()
)
DEVICES = st.sampled_from(
    ["NVIDIA A100-PCIE-40GB", "AMD Instinct MI250X", "", "Mystery Board", "NVIDIA Quantum Z9"]
)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The field's expected shape most of the time, arbitrary JSON otherwise."""
    return st.one_of(strategy, strategy, strategy, JSON)


def _write(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


# -- one strategy per format: (writer of the source under a folder) -------------------------

PARAMS = ("block_size_x", "tile", "use_shmem")

kerneltuner_entry = st.fixed_dictionaries(
    {},
    optional={
        "block_size_x": maybe(st.sampled_from([16, 32, 64, 128])),
        "tile": maybe(st.integers(1, 4)),
        "use_shmem": maybe(st.integers(0, 1)),
        "time": st.one_of(
            LATENCY, st.sampled_from(["CompilationFailedConfig", "RuntimeFailedConfig"]), JSON
        ),
        "times": maybe(st.lists(LATENCY, max_size=4)),
        "GFLOP/s": maybe(LATENCY),
        "timestamp": maybe(st.text(max_size=4)),
    },
)
kerneltuner_doc = st.fixed_dictionaries(
    {"cache": maybe(st.dictionaries(st.text(max_size=4), maybe(kerneltuner_entry), max_size=30))},
    optional={
        "device_name": maybe(DEVICES),
        "kernel_name": maybe(st.text(max_size=8)),
        "tune_params_keys": maybe(st.lists(st.sampled_from(PARAMS), max_size=3, unique=True)),
        "tune_params": JSON,
        "problem_size": JSON,
        "objective": JSON,
    },
)

t4_result = st.fixed_dictionaries(
    {},
    optional={
        "configuration": maybe(st.dictionaries(st.sampled_from(PARAMS), SCALARS, max_size=3)),
        "invalidity": maybe(st.sampled_from(["correct", "compile", "runtime", "constraints"])),
        "correctness": JSON,
        "measurements": maybe(
            st.lists(
                st.fixed_dictionaries({"name": maybe(st.just("time")), "value": maybe(LATENCY)}),
                max_size=2,
            )
        ),
        "objectives": maybe(st.just(["time"])),
        "times": maybe(
            st.fixed_dictionaries(
                {}, optional={"runtimes": maybe(st.lists(LATENCY)), "compilation": LATENCY}
            )
        ),
    },
)
t4_doc = st.fixed_dictionaries(
    {"results": maybe(st.lists(maybe(t4_result), max_size=20))},
    optional={
        "schema_version": maybe(st.sampled_from(["1.0.0", "2.0.0"])),
        "metadata": maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "timeunit": maybe(st.sampled_from(["ms", "s", "us", "fortnights"])),
                    "device_name": maybe(DEVICES),
                    "kernel_name": maybe(st.text(max_size=6)),
                },
            )
        ),
    },
)

vllm_config = st.dictionaries(
    st.sampled_from(["BLOCK_SIZE_M", "BLOCK_SIZE_N", "num_warps", "num_stages"]),
    maybe(st.integers(1, 256)),
    max_size=4,
)
vllm_doc = maybe(
    st.dictionaries(
        st.one_of(st.integers(1, 4096).map(str), st.text(max_size=5)),
        maybe(vllm_config),
        max_size=12,
    )
)

triton_pair = st.tuples(
    maybe(
        st.fixed_dictionaries(
            {},
            optional={
                "kwargs": maybe(st.dictionaries(st.sampled_from(["BLOCK"]), SCALARS)),
                "num_warps": maybe(st.integers(1, 8)),
            },
        )
    ),
    maybe(st.one_of(LATENCY, st.lists(LATENCY, max_size=3))),
).map(list)
triton_doc = st.fixed_dictionaries(
    {"configs_timings": maybe(st.lists(maybe(triton_pair), max_size=20))},
    optional={"key": JSON},
)

timing_entry = st.fixed_dictionaries(
    {},
    optional={
        "mean": maybe(LATENCY),
        "min": maybe(LATENCY),
        "std": maybe(LATENCY),
        "num_trials": maybe(LATENCY),
        "hardware": maybe(DEVICES),
    },
)
timing_doc = maybe(
    st.dictionaries(
        st.sampled_from(["level1", "level2", "level²", "levelx"]),
        maybe(
            st.dictionaries(
                st.sampled_from(["1_Square_matmul.py", "23_Softmax.py", "odd"]),
                maybe(timing_entry),
            )
        ),
    )
)

run_result = st.fixed_dictionaries(
    {},
    optional={
        "compiled": maybe(st.booleans()),
        "correctness": JSON,
        "runtime": maybe(LATENCY),
        "metadata": maybe(
            st.fixed_dictionaries(
                {},
                optional={"hardware": maybe(DEVICES), "runtime_error": JSON, "device": JSON},
            )
        ),
    },
)
run_doc = maybe(
    st.dictionaries(
        st.sampled_from(["1", "2", "23"]),
        maybe(st.dictionaries(st.sampled_from(["0", "1"]), maybe(run_result), max_size=3)),
        max_size=3,
    )
)

program = st.fixed_dictionaries(
    {},
    optional={
        "id": JSON,
        "code": maybe(st.text(max_size=20)),
        "metrics": maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "runtime": maybe(LATENCY),
                    "correctness": JSON,
                    "error": JSON,
                    "combined_score": JSON,
                },
            )
        ),
        "generation": JSON,
        "iteration_found": JSON,
        "metadata": JSON,
        "parent_id": JSON,
    },
)
openevolve_source = st.tuples(
    st.lists(maybe(program), min_size=1, max_size=6),
    st.one_of(st.none(), JSON, st.fixed_dictionaries({}, optional={"chip": maybe(DEVICES)})),
)

native_attempt = st.fixed_dictionaries(
    {"index": maybe(st.integers(0, 10))},
    optional={
        "params": JSON,
        "compiled": maybe(st.booleans()),
        "correct": maybe(st.one_of(st.none(), st.booleans())),
        "error_category": maybe(st.sampled_from([None, "compile", "weird"])),
        "latency_ms": maybe(LATENCY),
        "metrics": JSON,
        "code": JSON,
    },
)
native_line = st.fixed_dictionaries(
    {
        "version": maybe(st.just(1)),
        "source_format": maybe(st.just("synthetic")),
        "source": maybe(st.text(max_size=6)),
        "task": maybe(
            st.fixed_dictionaries(
                {"op": maybe(st.sampled_from(["softmax", ""]))}, optional={"signature": JSON}
            )
        ),
        "context": maybe(
            st.fixed_dictionaries(
                {
                    "chip": maybe(st.sampled_from(["a100", "h200", ""])),
                    "backend": maybe(st.just("cuda")),
                }
            )
        ),
        "attempts": maybe(st.lists(maybe(native_attempt), max_size=8)),
    },
    optional={"evidence": JSON, "baseline_latency_ms": maybe(LATENCY)},
)


def kerneltuner_source(root: Path, doc: Any) -> Path:
    _write(root / "synthetic.json", doc)
    return root / "synthetic.json"


def t4_source(root: Path, doc: Any) -> Path:
    _write(root / "convolution" / "A100_T4.json", doc)
    return root / "convolution" / "A100_T4.json"


def vllm_source(root: Path, doc: Any) -> Path:
    path = root / "E=8,N=14336,device_name=NVIDIA_A100-SXM4-80GB,dtype=fp8_w8a8.json"
    _write(path, doc)
    return path


def triton_source(root: Path, doc: Any) -> Path:
    _write(root / "softmax_kernel.autotune.json", doc)
    return root / "softmax_kernel.autotune.json"


def timing_source(root: Path, doc: Any) -> Path:
    _write(root / "A100_modal" / "baseline_time_torch.json", doc)
    return root / "A100_modal"


def run_source(root: Path, doc: Any) -> Path:
    folder = root / "level1_run"
    _write(folder / "eval_results.json", doc)
    (folder / "level_1_problem_1_sample_0_kernel.py").write_text("def kernel(): pass\n")
    return folder


def openevolve_source_writer(root: Path, source: Any) -> Path:
    programs, meta = source
    folder = root / "run" / "checkpoints" / "checkpoint_1"
    for i, item in enumerate(programs):
        _write(folder / "programs" / f"{i}.json", item)
    if meta is not None:
        _write(folder / "metadata.json", meta)
    return folder


def native_source(root: Path, lines: Any) -> Path:
    path = root / "runs.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _check_source(fmt: str, write: Callable[[Path, Any], Path], doc: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), doc)
        try:
            direct = list(get_reader(fmt).read(path))
        except ReaderError as exc:
            assert exc.reason
            direct = []
        for item in direct:
            assert isinstance(item, TrajectoryRecord | RejectedRecord)
            if isinstance(item, RejectedRecord):
                assert item.reason and isinstance(item.reason, str)
        for record in read_any([path], fmt=fmt):
            if isinstance(record, RejectedRecord):
                assert record.reason and record.position
                continue
            assert record_problem(record) is None
            json.dumps(record.to_dict(), allow_nan=False)
            _check_distill(record)


def _check_distill(record: TrajectoryRecord) -> None:
    try:
        drafts = distill(record)
    except DistillError as exc:
        assert exc.reason
        return
    for draft in drafts:
        assert draft.kind in ("insight", "failure", "exemplar", "api") and draft.text
        json.dumps(asdict(draft), allow_nan=False)


@BOUNDED
@given(kerneltuner_doc)
def test_kerneltuner_reader_never_crashes(doc: Any) -> None:
    _check_source("kerneltuner", kerneltuner_source, doc)


@BOUNDED
@given(t4_doc)
def test_t4_reader_never_crashes(doc: Any) -> None:
    _check_source("t4", t4_source, doc)


@BOUNDED
@given(vllm_doc)
def test_vllm_moe_reader_never_crashes(doc: Any) -> None:
    _check_source("vllm-moe", vllm_source, doc)


@BOUNDED
@given(triton_doc)
def test_triton_autotune_reader_never_crashes(doc: Any) -> None:
    _check_source("triton-autotune", triton_source, doc)


@BOUNDED
@given(timing_doc)
def test_kernelbench_timing_reader_never_crashes(doc: Any) -> None:
    _check_source("kernelbench-timing", timing_source, doc)


@BOUNDED
@given(run_doc)
def test_kernelbench_run_reader_never_crashes(doc: Any) -> None:
    _check_source("kernelbench-run", run_source, doc)


@BOUNDED
@given(openevolve_source)
def test_openevolve_reader_never_crashes(source: Any) -> None:
    _check_source("openevolve", openevolve_source_writer, source)


@BOUNDED
@given(st.lists(maybe(native_line), min_size=1, max_size=4))
def test_native_reader_never_crashes(lines: Any) -> None:
    _check_source("native", native_source, lines)


attempts = st.builds(
    AttemptRecord,
    index=st.integers(0, 100),
    params=st.fixed_dictionaries(
        {"a": st.integers(0, 3), "b": st.sampled_from(["x", "y"]), "c": st.booleans()}
    ),
    compiled=st.booleans(),
    correct=st.one_of(st.none(), st.booleans()),
    error_category=st.sampled_from([None, "compile", "runtime", "incorrect"]),
    error=st.one_of(st.none(), st.text(max_size=20)),
    latency_ms=st.one_of(st.none(), LATENCY),
    code=st.one_of(st.none(), st.just("kernel()")),
)


@BOUNDED
@given(st.lists(attempts, max_size=80), st.sampled_from(["a100", "unknown", "unknown:board"]))
def test_distiller_returns_strict_json_or_a_distill_error(
    attempt_list: list[AttemptRecord], chip: str
) -> None:
    traj = TrajectoryRecord(
        "synthetic", "s", TaskSpec("softmax"), ContextSpec(chip, "cuda"), attempt_list
    )
    _check_distill(traj)
