"""`python -m tunemem.cli`: the `tunemem` command."""

from tunemem.cli.app import main

main()
