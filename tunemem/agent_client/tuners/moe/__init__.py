"""`tunemem tune moe`: a vLLM fused-MoE configuration file for a new GPU, tuned in rounds.

`tune` runs the rounds (`rounds`: the run's state and what each round times) with the memory's
part (`memory`: the shipped files other GPUs chose, suggestions, reports); `search_space`
writes the memory's ranked candidates as SGLang's `--search-space-file`.
"""
