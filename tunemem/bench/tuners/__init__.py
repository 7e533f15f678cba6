"""`tunemem bench tuners`: the Kernel Tuner strategy against Kernel Tuner's own, in simulation
mode."""
