"""Benchmarks, one folder per `tunemem bench` command (`python -m tunemem.bench.<name>` runs the
same);
`common/` holds what they share, `studies/` the one-off studies; the clone's `bench/results/`
what they measured, one folder per command (`common.paths.RESULTS_OF`)."""
