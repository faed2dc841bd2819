"""The input files a piece of work read, noted while it runs, so that its product can be reused
later only while every one of them is as it was.

Loading a diagram reads its file and its subsystem files; compiling it reads robot files, URDF
files and closed-chain files. `recording()` collects, for the work inside it, each file read
through `read_input_bytes` with a digest of its bytes, and each file a loader kept by its
modification time (the robot and closed-chain loaders keep a model per path and modification time,
and do not read the file again: `stamped`). `unchanged(deps)` tells whether all of them still hold:
a digest is checked against the file's bytes read again, a stamp against its modification time, as
the loader that noted it checks. The engine reuses a Simulator for a newly loaded Diagram of the
same content only while its dependencies are unchanged (engine/simulate.py, `simulate`).
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import pickle
from pathlib import Path
from typing import Iterator

_ACTIVE: contextvars.ContextVar[tuple[list, ...]] = contextvars.ContextVar("blocksim_recordings",
                                                                          default=())
"""The recordings open in this thread (innermost last): a file noted goes into each of them, as a
dependency of the inner work is one of the work around it too."""


@contextlib.contextmanager
def recording() -> Iterator[list]:
    """The list of dependencies noted while the block runs (in this thread): ("content", path,
    digest) and ("stamp", path, modification time in ns) entries, paths absolute."""
    noted: list = []
    token = _ACTIVE.set(_ACTIVE.get() + (noted,))
    try:
        yield noted
    finally:
        _ACTIVE.reset(token)


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def note_content(path, data: bytes) -> None:
    """Note that the bytes `data` were read from the file `path` (nothing when no recording is
    open: the digest is taken only for a recording)."""
    active = _ACTIVE.get()
    if active:
        entry = ("content", os.path.abspath(path), _digest(data))
        for noted in active:
            noted.append(entry)


def note(deps) -> None:
    """Note the dependencies `deps` (entries of an earlier recording) again, for work that reuses
    what that recording's work made instead of doing it anew."""
    active = _ACTIVE.get()
    if active:
        for noted in active:
            noted.extend(deps)


def stamped(path) -> tuple[str, int]:
    """(the absolute path of `path`, symbolic links resolved, its modification time in ns): the
    key under which a loader keeps what it made of the file, noted as a dependency (it does not
    read the file again while the time holds)."""
    path = Path(path)
    source, stamp = str(path.resolve()), path.stat().st_mtime_ns
    active = _ACTIVE.get()
    if active:
        entry = ("stamp", source, stamp)
        for noted in active:
            noted.append(entry)
    return source, stamp


def essential(deps) -> tuple:
    """The dependencies `deps` each once, and a file kept by its stamp by the stamp alone: the
    loader's bytes read on its first load could not change what it gives while the stamp holds,
    so checking them again is a file read for nothing."""
    kept = {path for kind, path, _ in deps if kind == "stamp"}
    return tuple(dict.fromkeys(d for d in deps if d[0] == "stamp" or d[1] not in kept))


def blocksim_environment() -> tuple:
    """blocksim's environment variables (BLOCKSIM_*: mode, threads, limits, cache folder) as a
    sorted tuple of (name, value), for keys of what depends on them. Read from the process
    environment's raw table where the platform keeps one (POSIX: bytes, not decoded item by item:
    a tenth of the time, which a loop of load() and simulate() pays twice a call)."""
    raw = getattr(os.environ, "_data", None)
    if os.name == "posix" and isinstance(raw, dict):      # CPython's bytes table
        return tuple(sorted((k, v) for k, v in raw.items() if k.startswith(b"BLOCKSIM_")))
    return tuple(sorted(item for item in os.environ.items() if item[0].startswith("BLOCKSIM_")))


def load_context(overrides) -> tuple | None:
    """What loading a diagram depends on besides its files' bytes, as a key: the `set` overrides
    (pickled, by key: each is a leaf, so their order changes nothing), the working directory
    (relative file names) and blocksim's environment variables (blocksim_environment). None when
    the overrides do not pickle."""
    try:
        items = pickle.dumps(sorted((overrides or {}).items()), protocol=pickle.HIGHEST_PROTOCOL)
        folder = os.getcwd()
    except (pickle.PicklingError, TypeError, AttributeError, OSError):
        return None
    return items, folder, blocksim_environment()


def unchanged(deps) -> bool:
    """True when every dependency noted in `deps` still holds (a file that cannot be read or
    stat'ed any more does not)."""
    for kind, path, value in deps:
        try:
            if kind == "content":
                if _digest(Path(path).read_bytes()) != value:
                    return False
            elif os.stat(path).st_mtime_ns != value:
                return False
        except OSError:
            return False
    return True


__all__ = ["blocksim_environment", "essential", "load_context", "note", "note_content", "recording",
           "stamped", "unchanged"]
