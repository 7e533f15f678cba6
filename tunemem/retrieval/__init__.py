"""Pure ranking and value logic: gating, value estimation, blending, exploration, rewards.

No I/O, no database, no HTTP: functions over plain data, tested with hand-computed numbers.
Import the module that holds what you need (`retrieval.ranking`, `retrieval.values`, ...):
the package itself imports nothing, so that a light importer (the CLI through `--url`, whose
API models read `retrieval.toolchain`) does not pay for numpy and the performance model.
"""
