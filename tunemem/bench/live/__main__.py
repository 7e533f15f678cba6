"""`python -m tunemem.bench.live`: the same as `tunemem bench live`."""

from tunemem.bench.live.run import main

raise SystemExit(main())
