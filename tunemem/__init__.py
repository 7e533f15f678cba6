"""tunemem: a memory of kernel-tuning experience that tuning agents and engineers learn from.

Its parts are subpackages: `memory_service` (the service, its CLI and HTTP and MCP doors),
`ingest`, `retrieval`, `agent_client`, `kernels`, `platforms` and `bench`. What users type most
has a short name: `tunemem.tuners` (the Kernel Tuner strategy, the `triton.autotune` drop-in,
the MoE tuner).
"""

__version__ = "0.1.0"
