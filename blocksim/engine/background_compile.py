"""Compiling, in a background process, the kernels a run used as Python twins, for later runs.

An interpreted run that meets kernels numba has not compiled yet (a first run on a machine, or
the first after blocksim's source changed) and is short runs their Python twins rather than
waiting tens of seconds for the compiler (engine.mode.waits_for_kernels). The signatures it used
are written as one request file into the spool folder, cache_dir()/compile-requests, and a worker
process (one per spool folder at a time, detached from the terminal, at low priority) compiles
every request it finds, numba caching the machine code on disk, and exits when the spool is
empty. Later runs load the compiled kernels from numba's cache.

The spool holds pickled numba type signatures, so it is trusted as the cache is: a folder of the
user's own that nobody else may write (checked before each request file is read).
"""
from __future__ import annotations

import importlib
import os
import pickle
import stat
import subprocess
import sys
import time
from pathlib import Path

from .numba_backend import cache_dir

try:
    import fcntl
except ImportError:                  # not a POSIX system: first runs compile before running
    fcntl = None

AVAILABLE = fcntl is not None
"""Whether kernels can be compiled in the background here (a POSIX file lock guards the spool)."""

REQUEST_SUFFIX = ".request"
LOCK_NAME = ".worker.lock"
LOG_NAME = "worker.log"
LOG_LIMIT = 1 << 20
"""The worker's log (what it compiled, how long it took, any failure) starts afresh past this."""

_told = {"done": False}


def spool_dir() -> Path:
    """The folder of compile requests (created private to the user on first use)."""
    return cache_dir() / "compile-requests"


def compile_in_background(deferred: list[tuple[str, str, tuple]]) -> int | None:
    """Ask for deferred = [(module, qualified name, numba signature), ...] to be compiled by the
    spool's worker, started now unless one is running; the worker's pid, or None when none had to
    start or the request could not be written (the kernels are then compiled by a later run).
    Says once per process, on stderr, what happens."""
    items = []
    for item in deferred:
        try:
            pickle.dumps(item)
            items.append(item)
        except Exception:            # a signature numba cannot pickle: compiled when first waited for
            pass
    if not items:
        return None
    try:
        spool = spool_dir()
        spool.mkdir(parents=True, exist_ok=True, mode=0o700)
        name = f"{os.getpid()}-{time.monotonic_ns()}"
        staging = spool / f".{name}.tmp"
        staging.write_bytes(pickle.dumps(items))
        staging.replace(spool / f"{name}{REQUEST_SUFFIX}")
        pid = _start_worker(spool)
    except OSError:
        return None
    if not _told["done"]:
        _told["done"] = True
        kernels = sorted({f"{m.rpartition('.')[2]}.{q}" for m, q, _ in items})
        more = f" and {len(kernels) - 3} more" if len(kernels) > 3 else ""
        running = f" (pid {pid})" if pid else ""
        print(f"note: {', '.join(kernels[:3])}{more} are not compiled on this machine yet: this "
              "run uses their Python code (the same arithmetic, slower) while a background "
              f"process{running} compiles them for later runs (up to a minute or two)",
              file=sys.stderr, flush=True)
    return pid


def _start_worker(spool: Path) -> int | None:
    """Start the spool's worker unless one holds its lock; its pid, or None."""
    with open(spool / LOCK_NAME, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None                  # a worker is running: it reads the spool again
        fcntl.flock(lock, fcntl.LOCK_UN)
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    log_path = spool / LOG_NAME
    if log_path.exists() and log_path.stat().st_size > LOG_LIMIT:
        log_path.unlink()
    with open(log_path, "ab") as log:
        worker = subprocess.Popen([sys.executable, "-m", __name__, str(spool)], env=env,
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                  start_new_session=True, close_fds=True)
    return worker.pid


def trusted(folder: Path) -> bool:
    """Whether a spool folder may be read: a directory owned by this user that no one else may
    write."""
    info = folder.lstat()
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def work(spool: Path) -> int:
    """The worker: compile every request in the spool until it is empty; the number compiled."""
    try:
        os.nice(10)
    except OSError:
        pass
    done = 0
    with open(spool / LOCK_NAME, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0
        while trusted(spool):
            requests = sorted(spool.glob(f"*{REQUEST_SUFFIX}"))
            if not requests:
                break
            for path in requests:
                try:
                    items = pickle.loads(path.read_bytes())
                finally:
                    path.unlink(missing_ok=True)
                for module, qualname, signature in items:
                    done += _compile(module, qualname, signature)
    return done


def _compile(module: str, qualname: str, signature: tuple) -> int:
    """Compile one kernel for one signature (numba caches it); 1, or 0 when it cannot be found."""
    target = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if target is None or not hasattr(target, "compile"):
        return 0
    started = time.perf_counter()
    target.compile(signature)
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} compiled {module}.{qualname} "
          f"in {time.perf_counter() - started:.1f} s", flush=True)
    return 1


if __name__ == "__main__":
    work(Path(sys.argv[1]))
