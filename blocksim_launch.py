"""The `blocksim` command's start: the installed command's entry point and `python cli.py`'s.

It sits outside the blocksim package so that it runs before blocksim is imported. Importing
blocksim makes some 10^5 objects that last as long as the process (modules, numba's types, the
library's kernels): Python's collector would walk them again and again while they are made
(about 0.1 s of a warm run). The collector is off during the import, and those objects are then
frozen out of its passes (gc.freeze): the process is the command's own. A program that imports
blocksim as a library keeps its collector as it is.
"""
import gc


def main() -> int:
    """Run the command line of sys.argv; its exit status."""
    gc.disable()
    try:
        from blocksim.cli import main as command_line
    finally:
        gc.freeze()
        gc.enable()
    return command_line()
