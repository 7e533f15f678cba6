"""The memory inside Triton's autotuner.

`autotune` is the drop-in for `triton.autotune` (and `hook` for an existing kernel): for a new
key Triton times only what the memory ranks best, searched in rounds (`choice`, `rounds`), and
every timing goes back as outcomes and a trajectory (`records`). `prune` is the memory's
`early_config_prune` for a decorator the user owns; `capture` (with `capture_records` and the
`capture_site` that `tunemem capture` puts on PYTHONPATH) sends every autotune a program runs.
"""
