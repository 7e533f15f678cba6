"""Kernel tests run Triton through its interpreter unless a GPU test asks for CUDA.

The variable must be set before any kernel module is imported, hence here, at collection.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
