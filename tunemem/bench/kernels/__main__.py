"""`python -m tunemem.bench.kernels`: the same as `tunemem bench kernels`."""

from tunemem.bench.kernels.run import main

raise SystemExit(main())
