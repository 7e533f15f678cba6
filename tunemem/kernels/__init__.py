"""Kernel tasks, their Triton templates, the evaluation harness and the runners.

`kernels.catalogue` names the tasks, `kernels.harness` checks and times one configuration,
`kernels.runners` evaluates configurations behind the `Runner` interface (cuda, cpu, replay),
`kernels.sweep` tunes a task over shapes into native trajectories; `bench.kernels.run` (outside
this package, with the other benchmarks) reports tuned kernels against PyTorch and the
hardware limits.
"""
