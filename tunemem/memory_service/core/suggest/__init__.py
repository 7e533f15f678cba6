"""Suggest: configurations from the memory's lessons and the performance model."""
