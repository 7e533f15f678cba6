"""`python -m tunemem ...`: the same as the `tunemem` command."""

from tunemem.cli.app import main

if __name__ == "__main__":
    main()
