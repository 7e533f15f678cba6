"""Benchmarks, one folder per `tunemem bench` command (`python -m tunemem.bench.<name>` runs the
same);
`common/` holds what they share, `studies/` the one-off studies, `results/` what they measured."""
