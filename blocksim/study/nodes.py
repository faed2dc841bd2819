"""The node types of a study's workers, for compiling once per type.

numba keys its cache of compiled code by the target it compiled for: LLVM's triple, the CPU's
name (haswell, znver3, ...) and its feature flags (numba's `magic_tuple`). A worker whose CPU
differs from the driver's finds no entry of its own in a shared cache and compiles the diagram
itself, and so does every other worker like it, all at once. The driver therefore asks every
worker its node type (this module's `node_type`, run on the worker), groups the workers by type
and has the diagram compiled once per type, before any unit is sent: by the driver itself for
its own type, by one worker of each other type for that type.

`cpu: generic` (the study file, or `sweep --cpu generic`) makes every worker compile for LLVM's
generic target of its architecture (numba's NUMBA_CPU_NAME=generic, no CPU-specific features):
one type, one compile, for a cluster of mixed CPUs, at the price of code that uses no vector
instructions beyond the architecture's baseline. numba takes its target when a process starts
(importing blocksim sets it up), so the target is a worker process's environment: the processes
and the Dask LocalCluster the driver starts get NUMBA_CPU_NAME=generic, the workers of a running
cluster must have been started with it (a worker that was not is named in an error), and the
threads executor runs in the driver's own process, compiled for the driver's CPU.

The same report carries the worker's blocksim version (the driver refuses workers of another
version) and its cache folder: workers of one type with another cache folder (another machine
without a shared file system) are another group, compiled once again there.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import socket

from ..errors import BlocksimError
from ..version import __version__

CPUS = ("native", "generic")
"""The values of a study's `cpu` key: each node type compiles for its own CPU, or for all one
generic target."""

GENERIC_ENV = {"NUMBA_CPU_NAME": "generic", "NUMBA_CPU_FEATURES": ""}
"""The environment a worker process is started with for `cpu: generic` (numba reads it when it
is imported)."""


def node_type() -> dict:
    """This process's node type, as numba compiles for it: {"cpu": the CPU name numba targets,
    "features": a short hash of its feature flags, "triple": LLVM's target triple, "cache": the
    compiled-code cache folder, "host": the machine's name, "blocksim": the version}."""
    from numba.core.registry import cpu_target

    from ..engine.numba_backend import cache_dir
    triple, cpu, features = cpu_target.target_context.codegen().magic_tuple()
    return {"cpu": cpu, "features": hashlib.sha256(str(features).encode()).hexdigest()[:12],
            "triple": triple, "cache": str(cache_dir()), "host": socket.gethostname(),
            "blocksim": __version__}


@contextlib.contextmanager
def generic_environment(generic: bool):
    """While held (generic): the environment worker processes started now inherit makes numba
    target the generic CPU (numba reads it when it starts, before blocksim is imported). The
    driver itself compiles nothing meanwhile; the environment is restored at the end."""
    saved = {k: os.environ.get(k) for k in GENERIC_ENV}
    if generic:
        os.environ.update(GENERIC_ENV)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def type_key(node: dict) -> tuple:
    """What decides whether two processes share compiled code: numba's target and the cache."""
    return node["triple"], node["cpu"], node["features"], node["cache"]


def type_name(node: dict) -> str:
    """A node type in words: "haswell (x86_64-unknown-linux-gnu, features 1a2b3c...)"."""
    return f"{node['cpu']} ({node['triple']}, features {node['features']})"


def check_workers(nodes: dict[str, dict], generic: bool) -> None:
    """Refuse workers of another blocksim version than this driver's, and, for cpu: generic,
    workers that compile for their own CPU (they set numba up before the study asked)."""
    other = {w: n["blocksim"] for w, n in nodes.items() if n["blocksim"] != __version__}
    if other:
        raise BlocksimError(f"workers run another blocksim version than this driver's "
                            f"{__version__}: " + ", ".join(f"{w} ({v})" for w, v in other.items())
                            + "; install the same version on every worker")
    if generic:
        native = [w for w, n in nodes.items() if n["cpu"] != GENERIC_ENV["NUMBA_CPU_NAME"]]
        if native:
            raise BlocksimError("cpu: generic, but these workers compile for their own CPU (numba "
                                "was set up in them before): " + ", ".join(native)
                                + "; start them with NUMBA_CPU_NAME=generic in their environment")


def groups(nodes: dict[str, dict]) -> list[list[str]]:
    """The workers grouped by node type (type_key), each group sorted, in the order of their
    first worker's name."""
    by: dict[tuple, list[str]] = {}
    for worker in sorted(nodes):
        by.setdefault(type_key(nodes[worker]), []).append(worker)
    return list(by.values())


def compiled_text(plan: list[dict]) -> str:
    """How a study compiled, in words, from its plan [{"type": ..., "on": ..., "workers": n}]."""
    if len(plan) == 1:
        p = plan[0]
        return f"one node type, {p['type']}: compiled once, on {p['on']}"
    return f"{len(plan)} node types, compiled once each: " + "; ".join(
        f"{p['type']} on {p['on']} ({p['workers']} worker(s))" for p in plan)
