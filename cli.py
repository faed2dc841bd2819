"""Launcher so that `python cli.py ...` works from a checkout without installing."""
import sys

from blocksim.cli import main

if __name__ == "__main__":
    sys.exit(main())
