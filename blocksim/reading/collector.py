"""Python's garbage collector paused while a large input is turned into objects.

Building a tree of a million small objects (a YAML document, a compiled diagram of tens of
thousands of blocks) triggers the cyclic collector again and again, each pass over every object
alive: about a third of compiling a 40,000-block diagram, growing faster than the diagram. None of
what is built is garbage until it is done, so the collector waits until then."""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector off for the duration (as it was before, after); usable as a
    decorator (`@collector_paused()`)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
