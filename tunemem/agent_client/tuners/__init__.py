"""The memory inside the tuners engineers already run.

`agent_client.tuners.kernel_tuner.MemoryStrategy`: a Kernel Tuner strategy that evaluates the
memory's suggestions first, then searches on its own, and reports every evaluation back.
`agent_client.tuners.triton_autotune`: a drop-in for `triton.autotune` that times only the
configurations the memory ranks best and reports every timing back. Like the rest of
`agent_client`, these reach the memory over HTTP only.
"""
