"""`python -m tunemem.bench.moe`: the same as `tunemem bench moe`."""

from tunemem.bench.moe.run import main

raise SystemExit(main())
