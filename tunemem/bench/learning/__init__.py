"""`tunemem bench learning`: does the memory learn? Replayed Kernel Tuner spaces, loo and
lifelong."""
