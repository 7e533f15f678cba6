"""`python -m memory_service.cli`: the `tunemem` command."""

from memory_service.cli.app import main

main()
