"""The memory inside the tuners engineers already run, one module or folder per tuner:

- `kernel_tuner.MemoryStrategy` (its runner questions in `kernel_tuner_runner`): a Kernel Tuner
  strategy that evaluates the memory's suggestions first, then searches on its own, and
  reports every evaluation back;
- `triton/`: a drop-in for `triton.autotune` that times only the configurations the memory
  ranks best and reports every timing back, and the capture of a program's autotunes;
- `moe/`: `tunemem tune moe`, vLLM's fused-MoE file tuned in rounds with the memory;
- `helion/`: the memory's seeds and a remote cache for Helion's autotuner.

Shared by them: `memory_link` (the bounded way to the memory, and the background reporter),
`memory_policy` (what a failure costs: one warning, then the memory left alone) and
`memory_answers` (a suggest answer read as untrusted data). Like the rest of `agent_client`,
these reach the memory over HTTP only.
"""
