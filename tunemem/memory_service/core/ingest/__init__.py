"""Storing ingested runs: trajectories into attempts and lessons, embedded ahead of the store."""
