"""`tunemem bench autotune` and `python -m tunemem.bench.autotune`: the full-cache protocol
(`bench.autotune.run`) or, with `--cold`, the cold one (`bench.autotune.cold`)."""

from __future__ import annotations

from tunemem.bench.autotune.cold import ColdAutotuneBench
from tunemem.bench.autotune.run import AutotuneBench, parser
from tunemem.bench.common.options import command_line, prog


def main(argv: list[str] | None = None) -> int:
    args = parser(prog("autotune", argv)).parse_args(argv)
    args.command = command_line("autotune", argv)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("bench autotune needs an NVIDIA GPU with CUDA; none is visible")
    # Each writes its result through write_result, which prints its Markdown.
    (ColdAutotuneBench if args.cold else AutotuneBench)(args).run()
    return 0
