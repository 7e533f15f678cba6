"""The real kernel tasks: a PyTorch reference, an input generator and a Triton template each."""
