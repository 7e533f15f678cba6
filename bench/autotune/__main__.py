"""`python -m bench.autotune`: the same as `tunemem bench autotune`."""

from bench.autotune.command import main

raise SystemExit(main())
