"""`python -m bench.moe`: the same as `tunemem bench moe`."""

from bench.moe.run import main

raise SystemExit(main())
