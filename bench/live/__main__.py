"""`python -m bench.live`: the same as `tunemem bench live`."""

from bench.live.run import main

raise SystemExit(main())
