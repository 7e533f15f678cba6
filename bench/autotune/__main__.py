"""`python -m bench.autotune`: the same as `tunemem bench autotune`."""

from bench.autotune.run import main

raise SystemExit(main())
