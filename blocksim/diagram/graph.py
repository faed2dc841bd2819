"""Port-level dependency graph: algebraic-loop detection and the sorted evaluation order."""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter

from ..errors import AlgebraicLoopError


@dataclass(frozen=True)
class OutputCall:
    """One call of a block's output method in the sorted order.

    A block whose outputs depend on different inputs (the Manipulator: q from state, qdd from tau)
    may be called twice: early for the outputs that read no input, late for the rest, so that
    feeding q back is not a loop. `serves` lists the outputs that are valid after this call.
    """

    block: str
    serves: tuple[str, ...]


def output_groups(block) -> dict[frozenset[str], tuple[str, ...]]:
    """The block's outputs grouped by the set of inputs they read directly."""
    reads: dict[str, set[str]] = {o: set() for o in block.output_names()}
    for i, o in block.feedthrough():
        reads[o].add(i)
    groups: dict[frozenset[str], list[str]] = {}
    for o in block.output_names():
        groups.setdefault(frozenset(reads[o]), []).append(o)
    return {k: tuple(v) for k, v in groups.items()}


def find_algebraic_loop(blocks: dict, wires: dict[tuple[str, str], tuple[str, str]]):
    """A cycle of direct-feedthrough paths as a list of 'block.port' names, or None.

    wires maps each (consumer block, input port) to its (driver block, output port).
    """
    import networkx as nx     # only a failed ordering asks: keep it off the start-up of a run
    g = nx.DiGraph()
    for name, blk in blocks.items():
        for i, o in blk.feedthrough():
            g.add_edge(("in", name, i), ("out", name, o))
    for (dst, dport), (src, sport) in wires.items():
        g.add_edge(("out", src, sport), ("in", dst, dport))
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return None
    names = []
    for (_, blk, port), _next in cycle:
        label = f"{blk}.{port}"
        if not names or names[-1] != label:
            names.append(label)
    return names


def sorted_calls(blocks: dict, wires: dict[tuple[str, str], tuple[str, str]],
                 file_order: list[str]) -> list[OutputCall]:
    """Output calls in data-flow order; raises AlgebraicLoopError naming every port on a loop.

    Blocks are kept whole when that leaves no cycle; only when a cycle passes through blocks whose
    outputs read different inputs are those blocks split into one call per output group.
    Ties are broken by the order of the blocks in the file, so the order is reproducible.
    """
    order = _try_order(blocks, wires, file_order, split=False)
    if order is None:
        order = _try_order(blocks, wires, file_order, split=True)
    if order is not None:
        return order
    # a cycle of direct-feedthrough ports maps onto the split graph, so the port graph (slower to
    # search) is only asked when ordering failed: name the ports on the loop
    loop = find_algebraic_loop(blocks, wires)
    assert loop is not None, "the split graph is acyclic whenever the port graph is"
    involved = sorted({p.split(".")[0] for p in loop}, key=file_order.index)
    raise AlgebraicLoopError(
        "algebraic loop (a cycle of direct-feedthrough paths) through "
        + " -> ".join(loop + [loop[0]])
        + f"; blocks on it: {', '.join(involved)}. Break it with a block that has no direct "
        "feedthrough (UnitDelay, Integrator, a discrete block) or by feeding back a state output.")


def block_order(calls: list[OutputCall]) -> list[str]:
    """Every block once, in the order of its first output call."""
    return list(dict.fromkeys(call.block for call in calls))


def _try_order(blocks, wires, file_order, split: bool):
    """The calls in topological order, ties to the earliest in the file, or None on a cycle.
    The stdlib's graphlib sorts (a run's start-up does not import networkx for it); the heap
    makes the order lexicographic in the file's order among the calls ready at each point."""
    rank = {name: k for k, name in enumerate(file_order)}
    before: dict[tuple[str, int], set[tuple[str, int]]] = {}
    node_of_output: dict[tuple[str, str], tuple[str, int]] = {}
    node_inputs: dict[tuple[str, int], frozenset[str]] = {}
    nodes_of: dict[str, list[tuple[str, int]]] = {}
    serves: dict[tuple[str, int], tuple[str, ...]] = {}
    for name, blk in blocks.items():
        groups = output_groups(blk)
        if split and len(groups) > 1:
            parts = sorted(groups.items(), key=lambda kv: len(kv[0]))
        else:
            reads = frozenset().union(*groups.keys()) if groups else frozenset()
            parts = [(reads, tuple(blk.output_names()))]
        for k, (reads, outs) in enumerate(parts):
            node = (name, k)
            before[node] = {(name, k - 1)} if k else set()
            node_inputs[node] = reads
            nodes_of.setdefault(name, []).append(node)
            serves[node] = outs
            for o in outs:
                node_of_output[(name, o)] = node
    for (dst, dport), (src, sport) in wires.items():
        for node in nodes_of.get(dst, ()):
            if dport in node_inputs[node]:
                before[node].add(node_of_output[(src, sport)])
    sorter = TopologicalSorter(before)
    try:
        sorter.prepare()
    except CycleError:
        return None
    ready: list[tuple[int, int, str]] = []
    calls = []
    while sorter.is_active():
        for name, k in sorter.get_ready():
            heapq.heappush(ready, (rank[name], k, name))
        _, k, name = heapq.heappop(ready)
        calls.append(OutputCall(name, serves[(name, k)]))
        sorter.done((name, k))
    return calls
