"""`python -m bench.kernels`: the same as `tunemem bench kernels`."""

from bench.kernels.run import main

raise SystemExit(main())
