"""`tunemem bench kernels`: the project's Triton kernels against their references."""
