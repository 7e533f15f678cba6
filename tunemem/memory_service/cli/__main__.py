"""`python -m tunemem.memory_service.cli`: the `tunemem` command."""

from tunemem.memory_service.cli.app import main

main()
