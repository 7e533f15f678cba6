"""`tunemem bench autotune` and `python -m tunemem.bench.autotune`: the full-cache protocol
(`bench.autotune.run`) or, with `--cold`, the cold one (`bench.autotune.cold`)."""

from __future__ import annotations

from tunemem.bench.autotune.cold import ColdAutotuneBench, render_cold
from tunemem.bench.autotune.run import AutotuneBench, parser, render_markdown
from tunemem.bench.common.options import prog


def main(argv: list[str] | None = None) -> int:
    args = parser(prog("autotune", argv)).parse_args(argv)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("bench autotune needs an NVIDIA GPU with CUDA; none is visible")
    if args.cold:
        print(render_cold(ColdAutotuneBench(args).run()))
        return 0
    report = AutotuneBench(args).run()
    if not args.full_only:
        print(render_markdown(report))
    return 0
