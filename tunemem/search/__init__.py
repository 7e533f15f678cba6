"""The configuration search behind `/v1/suggest` and the tuners, and the performance
model that guides it (pure: no database, network, files or processes).

`suggest`: a search space, its observations and the next configurations to try;
`hints` and `steps`: what the memory's lessons add and the local moves; `model`: the
per-family performance model (encoding, family, GP residual, chip weights, batch
composition, pooled model); `model_search`: the search the model drives.
"""
