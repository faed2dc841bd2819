"""Launcher so that `python cli.py ...` works from a checkout without installing."""
import sys

if __name__ == "__main__":
    from blocksim_launch import main
    sys.exit(main())

from blocksim.cli import main  # noqa: E402,F401  (cli.py imported as a module)
