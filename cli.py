"""Launcher so that `python cli.py ...` works from a checkout without installing."""
import gc
import sys

if __name__ == "__main__":
    # Importing blocksim makes some 10^5 objects that last as long as the process (modules,
    # numba's types, the library's kernels): Python's collector would walk them again and again
    # while they are made (about 0.1 s of a warm run). It is off during the import, and those
    # objects are then frozen out of its passes (gc.freeze): this process is the command's own.
    gc.disable()
    from blocksim.cli import main
    gc.freeze()
    gc.enable()
    sys.exit(main())

from blocksim.cli import main  # noqa: E402,F401  (cli.py imported as a module)
