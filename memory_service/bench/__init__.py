"""Benchmarks composed by the tunemem CLI (learning, service, kernels)."""
