"""A batch run in parts, each part a Simulation of some of its members, joined on the run's log
grid: per-member step control (simulation.step_control: per_member), where each member is its
own part and takes its own steps, as an independent run; and a compiled fixed-step batch, run in
chunks of a few members on their own stack (numba_backend.CHUNK_MEMBERS).

Interpreted parts run one after another on the calling thread. Compiled parts run on `threads`
threads at once (the compiled loops release the GIL), each thread taking the next part not yet
started. A part that ends early (a terminal event, an interrupt) has NaN in the log after the
last time it reached; Ctrl-C stops the parts running and skips those not started. With more
than one part, one progress bar counts the members done (the parts show none of their own).
"""
from __future__ import annotations

import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

import numpy as np

from .progress import Progress
from .python_backend import PythonBackend
from .run_output import Event, RunOutput

COUNTERS = ("major_steps", "nfev", "nsteps", "nrejected", "events", "njev", "nlu")
"""The run statistics that are counts: a per-member batch reports their sums over members."""


def run_members(parts: list, threads: int, per_member: bool = True,
                progress: bool | None = None) -> RunOutput:
    """Run the part Simulations (of consecutive members, each part's count its cd.batch) and join
    their outputs in member order. Each part logs into its rows of the batch's log arrays, so
    joining copies nothing. per_member: the parts are members with their own steps (the
    statistics' counts are summed); else chunks of one fixed-step run (they are the first
    part's). progress: the settings' progress (a bar of members done; None: on a terminal)."""
    plan = parts[0].plan
    sizes = [sim.cd.batch for sim in parts]
    offsets = np.cumsum([0] + sizes).tolist()
    logs = {name: np.empty((offsets[-1], len(plan.log_grid), plan.slots[slot].width))
            for name, slot in plan.log}
    for p, sim in enumerate(parts):
        sim.stop_requested = False
        sim.new_log({name: arr[offsets[p]:offsets[p + 1]] for name, arr in logs.items()})
    compiled = not isinstance(parts[0].backend, PythonBackend)
    outs: list[RunOutput | None] = [None] * len(parts)
    bar = Progress(0, offsets[-1], progress, unit="members") if len(parts) > 1 else None

    def shown(done: int | None = None):
        if bar is not None:
            bar.update(done if done is not None else
                       sum(size for size, out in zip(sizes, outs) if out is not None), force=True)
    try:
        if compiled and threads > 1:
            _on_threads(parts, outs, threads, shown)
        else:
            try:
                for p, sim in enumerate(parts):
                    outs[p] = sim.run()
                    shown(offsets[p + 1])
                    if _interrupted(outs[p]):
                        break
            except KeyboardInterrupt:       # between two parts
                pass
    finally:
        if bar is not None:
            bar.close()
    used = min(threads, len(parts)) if compiled else 1
    # a part whose members ran in one loop (engine/adaptive_members.py) gave its segments
    grid = plan.log_grid
    flat, sizes_flat = [], []
    for size, out in zip(sizes, outs):
        for members, segment in (out if isinstance(out, list) else [(size, out)]):
            flat.append(segment)
            sizes_flat.append(members)
    return _joined(grid, np.cumsum([0] + sizes_flat).tolist(), flat, used, logs, per_member)


def _interrupted(out) -> bool:
    """Whether a part's run (its output, or its members' outputs) stopped before its end."""
    if isinstance(out, list):
        return any(o is None or o.interrupted for _, o in out)
    return out.interrupted


def _on_threads(parts: list, outs: list, threads: int, shown) -> None:
    """Run the parts on `threads` worker threads, each taking the next part not yet started (one
    shared counter: unequal parts balance, and a part costs no task of a pool: W1 dopri5, 300
    members on 2 cores, 0.307 -> 0.291 ms a member); an error or Ctrl-C stops them all (the
    first error is raised once every part has stopped). shown(): called on the calling thread
    while they run (the progress bar)."""
    upcoming = iter(range(len(parts)))      # next() on it is atomic under the GIL
    halted = threading.Event()

    def work() -> None:
        for p in upcoming:
            if halted.is_set():
                return
            outs[p] = parts[p].run()

    def halt() -> None:
        halted.set()
        for sim in parts:
            sim.stop_requested = True

    workers = min(threads, len(parts))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="blocksim-part") as pool:
        futures = [pool.submit(work) for _ in range(workers)]
        try:
            while wait(futures, timeout=0.1, return_when=FIRST_EXCEPTION).not_done:
                if any(f.done() and f.exception() for f in futures):
                    break
                shown()
        except KeyboardInterrupt:
            pass
        finally:
            if not all(f.done() for f in futures) or any(f.exception() for f in futures):
                halt()
        wait(futures)
    for f in futures:
        if f.exception() is not None:
            raise f.exception()


def _joined(grid: np.ndarray, offsets: list, outs: list, threads: int, logs: dict,
            per_member: bool) -> RunOutput:
    """The parts' outputs as one batch output: the times of the part that went furthest, each
    part's samples up to where it reached (an interrupted part's last sample, taken off the log
    grid at the time it reached, is kept only where that time is the joined one) and NaN after;
    events with their member; counters summed over the members of a per-member batch. logs:
    the batch's log arrays, each part's rows written by its run; offsets: where each output's
    members begin in the batch (and the end)."""
    done = [o for o in outs if o is not None]
    t = max((o.t for o in done), key=len, default=grid[:0])
    reach = []
    for o in outs:
        k = 0 if o is None else len(o.t)
        if k and o.t[k - 1] != t[k - 1]:
            k -= 1
        reach.append(k)
    signals = {}
    for name, joined in logs.items():
        for p in range(len(outs)):
            if reach[p] < joined.shape[1]:
                joined[offsets[p]:offsets[p + 1], reach[p]:] = np.nan
        # an early stop of every part leaves the grid's tail out (a copy, contiguous)
        signals[name] = joined if len(t) == joined.shape[1] else \
            np.ascontiguousarray(joined[:, :len(t)])
    events = [Event(e.t, e.block, e.index, offsets[p] + e.member)
              for p, o in enumerate(outs) if o is not None for e in o.events]
    stats = dict(done[0].stats) if done else {}
    if per_member:
        for key in COUNTERS:
            if key in stats:
                stats[key] = sum(int(o.stats.get(key, 0)) for o in done)
        stats["step_control"] = "per_member"
    stats["threads"] = threads
    interrupted = len(done) < len(outs) or any(o.interrupted for o in done)
    stopped_by = next((o.stopped_by for o in done if o.stopped_by), None)
    return RunOutput(np.array(t, dtype=float), signals, events, stats, interrupted, stopped_by)


__all__ = ["run_members"]
