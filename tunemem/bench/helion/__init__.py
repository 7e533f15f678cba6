"""Helion seeds on the GPU (`seeds_gpu.py`) and its report with a CPU replay (`report.py`)."""
