"""Fast restart across Diagram objects: the Simulators simulate() built lately, by the content of
their Diagram and call, for a newly loaded Diagram of the same content (docs/semantics.md, "fast
restart across Diagram objects"). The content is what the Diagram was loaded from
(content_key); a Simulator is reused only while the files its compile read are unchanged
(reading/dependencies.py) and it is still the Simulator a new call would build (same_content).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from ..blocks.base import REGISTRY
from ..reading.dependencies import load_context, unchanged

if TYPE_CHECKING:
    from ..diagram.diagram import Diagram

_BY_CONTENT: OrderedDict = OrderedDict()
"""Fast restart across Diagram objects: the Simulators of the last simulate() calls (at most
CONTENT_KEPT, the least recently used forgotten first; none whose run arrays exceed
CONTENT_KEPT_BYTES) by the content of their Diagram and call
(content_key), for a newly loaded Diagram of the same file, variant, overrides and settings."""
CONTENT_KEPT = 8
_BY_CONTENT_LOCK = threading.Lock()


def content_key(diagram: Diagram, run_key: bytes | None) -> tuple | None:
    """What a Simulator built for `diagram` with the batch and settings of `run_key` depends on,
    besides the files its compile read (Simulator.dependencies): the Diagram's path (or text),
    variant and overrides, the bytes of the files it was loaded from (Diagram.sources), the
    working directory (relative paths) and blocksim's environment variables (mode, limits, cache
    folder). None when the call cannot be keyed (an override that does not pickle)."""
    sources = getattr(diagram, "sources", None)     # None: a Diagram pickled before it had them
    if run_key is None or sources is None:
        return None
    context = load_context(diagram.overrides)
    if context is None:
        return None
    return (str(diagram.path), diagram.text, diagram.variant, sources, context, run_key)


def same_content(content: tuple | None) -> "Simulator | None":
    """The remembered Simulator of a Diagram with this content, taken (its busy lock held), when
    it is idle, runs the values it was built with (no set_parameters since) and everything its
    compile read is unchanged (the block types too: a plugin loaded again may have replaced
    one); else None."""
    if content is None:
        return None
    with _BY_CONTENT_LOCK:
        sim = _BY_CONTENT.get(content)
        if sim is None or not sim.busy.acquire(False):
            return None
        _BY_CONTENT.move_to_end(content)
    if not as_built(sim) or not _mode_settled(sim) \
            or not all(REGISTRY.get(type(blk).type_name, type(blk)) is type(blk)
                       for blk in sim.whole.blocks.values()) \
            or not unchanged(sim.dependencies):
        sim.busy.release()
        with _BY_CONTENT_LOCK:
            if _BY_CONTENT.get(content) is sim:
                del _BY_CONTENT[content]
        return None
    return sim


def as_built(sim) -> bool:
    """True when sim runs the values it was built with: set_parameters (called on a Simulator
    that `remembered` gave) was not used on it since, so it is the Simulator a new call would
    build."""
    return not sim.values_set and sim.whole.first_member == 0


def _mode_settled(sim) -> bool:
    """True when a new call would choose sim's execution mode again: it is compiled, or
    interpreted because the settings say so. (auto chose interpreted while kernels were still to
    compile, which they may be now: a newly loaded Diagram asks again.)"""
    return sim.settings.mode == "interpreted" or all(
        getattr(part.backend, "compiled", False) for part in sim.parts)


CONTENT_KEPT_BYTES = 16 * 2 ** 20
"""A Simulator whose run arrays (states and signals, of every member) take more bytes than this is
not kept for reuse by content: eight large batches would hold their memory past their Diagrams."""


def remember_content(content: tuple, sim) -> None:
    ctx = [part.context for part in sim.parts]
    held = sum(c.xc.nbytes + c.dxc.nbytes + c.xd.nbytes + c.g.nbytes
               + sum(a.nbytes for a in c.signals) for c in ctx)
    if held > CONTENT_KEPT_BYTES:
        return
    with _BY_CONTENT_LOCK:
        _BY_CONTENT[content] = sim
        _BY_CONTENT.move_to_end(content)
        while len(_BY_CONTENT) > CONTENT_KEPT:
            _BY_CONTENT.popitem(last=False)


def forget_simulators() -> None:
    """Let go of every Simulator the engine keeps for fast restart across Diagram objects (those
    kept per Diagram go with their Diagram)."""
    with _BY_CONTENT_LOCK:
        _BY_CONTENT.clear()


__all__ = ["as_built", "content_key", "forget_simulators", "remember_content", "same_content"]
