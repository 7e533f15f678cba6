"""`python -m tunemem.bench.autotune`: the same as `tunemem bench autotune`."""

from tunemem.bench.autotune.command import main

raise SystemExit(main())
