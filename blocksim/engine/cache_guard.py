"""The compiled cache's checks (engine/numba_backend.py): which of its folders and files may be
trusted and written, and the healing of damaged entries.

The cache holds code that runs as the user, so blocksim loads from it only when nobody else could
have put that code there: each folder and file of it must belong to the user and must not be
writable by every user. BLOCKSIM_CACHE_SHARED=group opts in to a cache shared by a group (a
cluster's shared file system): a folder or file that belongs to another user is trusted when its
group is one of the user's groups, and a folder writable by every user is trusted when it has the
sticky bit (then only a file's owner may rename or replace it). A file writable by every user is
never trusted.

A damaged entry (a generated module, or a numba index .nbi or data .nbc file, that is truncated or
garbled) is set aside as NAME.damaged-TIMESTAMP, never deleted, with a one-line BlocksimWarning
naming it, and rebuilt. A cache that cannot be used (not a folder, not writable, not trusted) gets
a one-line warning saying why, and the run goes on without it.
"""
from __future__ import annotations

import os
import stat
import threading
import time
import traceback
import warnings
from pathlib import Path
from typing import Callable, TypeVar

from numba.core import caching as _numba_caching

from ..errors import BlocksimWarning

SHARED_ENV = "BLOCKSIM_CACHE_SHARED"
"""The environment variable of the opt-in to a group-shared cache: unset, or "group"."""

FOLDER_MODE = {"private": 0o700, "group": 0o770}
"""Permissions of the cache folders blocksim creates (the umask may take more away)."""

FILE_MODE = {"private": 0o644, "group": 0o664}
"""Permissions of the generated modules blocksim writes (the umask may take more away)."""

MAX_HEALS = 8
"""Damaged files set aside for one compilation at most before blocksim gives up on the cache."""

T = TypeVar("T")


def warn(text: str) -> None:
    """The cache's one-line warning (the command line prints it as `warning: ...`)."""
    warnings.warn(BlocksimWarning(text), stacklevel=3)


def sharing() -> str:
    """"group" when BLOCKSIM_CACHE_SHARED=group opts in to a group-shared cache, else "private"
    (an unknown value is warned about and ignored: the stricter rule holds)."""
    value = os.environ.get(SHARED_ENV, "").strip()
    if value == "group":
        return "group"
    if value:
        warn(f"{SHARED_ENV} must be 'group' or unset, not {value!r}: the compiled cache is "
             "trusted only when it is your own")
    return "private"


def _owner(uid: int) -> str:
    try:
        import pwd
        return f"user {pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def untrusted(path: Path, shared: str) -> str | None:
    """Why blocksim must not load code from `path`, a folder or file of the cache (its owner or
    its permissions), or None when it may (or when it is gone: there is nothing to load).
    shared: "private" or "group" (sharing()). Where the system has no user ids (Windows, whose
    permissions are access lists that the mode bits do not show), nothing is refused."""
    if not hasattr(os, "getuid"):
        return None
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    folder = stat.S_ISDIR(st.st_mode)
    mode = stat.S_IMODE(st.st_mode)
    if mode & stat.S_IWOTH and not (folder and shared == "group" and mode & stat.S_ISVTX):
        fix = f"`chmod o-w {path}`"
        if folder:
            fix += f", or for a cache shared by a group `chmod +t {path}` and {SHARED_ENV}=group"
        return (f"{path} is writable by every user (mode {mode:o}), so anyone could put code "
                f"there that would run as you ({fix})")
    if st.st_uid != os.getuid():
        if shared == "group":
            if st.st_gid in {os.getgid(), *os.getgroups()}:
                return None
            return (f"{path} belongs to {_owner(st.st_uid)} and to group {st.st_gid}, which is "
                    f"not one of your groups ({SHARED_ENV}=group trusts your groups only)")
        return (f"{path} belongs to {_owner(st.st_uid)}, not to you, so it may hold code you did "
                f"not put there ({SHARED_ENV}=group trusts a cache shared with your groups)")
    return None


def prepare_folder(folder: Path, shared: str) -> str | None:
    """Create the cache folder (and its parent, the cache root) when missing, and check it:
    why it cannot be used (a file, not writable, not trusted), or None when it can."""
    for is_root, path in ((True, folder.parent), (False, folder)):
        if path.exists() and not path.is_dir():
            return f"{path} is a file, not a folder"
        try:
            if not path.exists():
                # the root's own parents too (~/.cache on a fresh account); pathlib makes a new
                # object at every .parent, so which one this is is said, not compared by identity
                path.mkdir(mode=FOLDER_MODE[shared], parents=is_root)
        except FileExistsError:
            pass                          # made by another process in the meantime
        except OSError as err:
            return f"{path} cannot be created ({err.strerror})"
        why = untrusted(path, shared)
        if why:
            return why
    probe = folder / f".probe-{os.getpid()}-{threading.get_ident()}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as err:
        return f"{folder} cannot be written ({err.strerror})"
    return None


def write_file(path: Path, data: bytes, shared: str) -> None:
    """Write `data` to `path` whole or not at all (a temporary file renamed over it, so a reader
    never sees half of it); raises OSError (no space, read-only)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE[shared])
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def set_aside(path: Path) -> Path:
    """Rename a damaged file to NAME.damaged-TIMESTAMP (NAME.damaged-TIMESTAMP.N when that is
    taken) beside it; returns the new path (raises OSError when it cannot be renamed)."""
    base = f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}"
    target, n = path.with_name(base), 1
    while target.exists():
        target, n = path.with_name(f"{base}.{n}"), n + 1
    os.rename(path, target)
    return target


def _damage(current: bytes, expected: bytes) -> str:
    if len(current) < len(expected) and expected.startswith(current):
        return f"truncated: {len(current)} of {len(expected)} bytes"
    return "its text is not the generated code"


def store_source(path: Path, source: bytes, shared: str) -> str | None:
    """Make `path` hold the generated module `source` (its name is a hash of the text, so any
    other content is damage: the file is set aside, with a warning, and written anew). Why the
    cache cannot be used (the file is not trusted, cannot be set aside or written), or None."""
    why = untrusted(path, shared)
    if why:
        return why
    reason = None
    try:
        current = path.read_bytes()
        if current == source:
            return None
        reason = _damage(current, source)
    except FileNotFoundError:
        pass                                    # not written yet
    except OSError as err:
        reason = f"unreadable: {err.strerror}"
    if reason is not None:
        try:
            aside = set_aside(path)
        except FileNotFoundError:
            aside = None                        # set aside by another process in the meantime
        except OSError as err:
            return f"{path} is damaged ({reason}) and cannot be set aside ({err.strerror})"
        if aside is not None:
            warn(f"compiled cache entry {path} is damaged ({reason}); set aside as {aside.name} "
                 "and written anew")
    try:
        write_file(path, source, shared)
    except OSError as err:
        return f"{path.parent} cannot be written ({err.strerror})"
    return None


def untrusted_entries(folder: Path, prefix: str, shared: str) -> str | None:
    """Why the numba cache folder `folder`, or one of its index and data files of the module
    `prefix` names, must not be loaded from (untrusted), or None."""
    if not folder.is_dir():
        return None                       # numba creates it at the first save
    why = untrusted(folder, shared)
    if why:
        return why
    for path in sorted(folder.glob(prefix + "*")):
        if path.suffix in (".nbi", ".nbc"):
            why = untrusted(path, shared)
            if why:
                return why
    return None


# ---- numba's cache, while a dispatcher compiles ------------------------------------------------

_CACHING_FILE = os.path.normcase(os.path.abspath(_numba_caching.__file__))
_heal_lock = threading.RLock()
_unwritable_told: set[str] = set()     # numba cache folders already warned about in this process


def _numba_cache_frames(err: BaseException) -> list:
    """The frames of numba's caching module in the traceback of err, outermost first, or, when
    there are none, in that of the first error err was raised from or during that has some."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        frames = [frame for frame, _ in traceback.walk_tb(err.__traceback__)
                  if os.path.normcase(os.path.abspath(frame.f_code.co_filename)) == _CACHING_FILE]
        if frames:
            return frames
        err = err.__cause__ or err.__context__
    return []


def _failure(err: BaseException):
    """(what, cache, files) when err comes from numba's on-disk cache: what is "load" (files: the
    damaged index or data file, as far as the frames tell) or "save" (files: none); else None."""
    frames = _numba_cache_frames(err)
    names = [f.f_code.co_name for f in frames]
    for what in ("load", "save"):
        if f"{what}_overload" not in names:
            continue
        cache = frames[names.index(f"{what}_overload")].f_locals.get("self")
        if not isinstance(cache, _numba_caching.Cache):
            return None
        if what == "save":
            return what, cache, []
        local = dict(frames[-1].f_locals)
        if names[-1] == "_load_data" and "path" in local:
            return what, cache, [Path(local["path"])]
        index = Path(cache._cache_file._index_path)
        if names[-1] == "_load_index":
            return what, cache, [index]
        files = [index]            # loaded, then failed to rebuild: the index and its data file
        key = frames[names.index("_load_overload")].f_locals.get("key") \
            if "_load_overload" in names else None
        try:
            name = cache._cache_file._load_index().get(key)
            if name is not None:
                files.append(Path(cache._cache_file._data_path(name)))
        except Exception:          # the index itself does not load: it is the one to set aside
            pass
        return what, cache, files
    return None


def _reason(err: BaseException) -> str:
    text = (str(err).strip().splitlines() or [""])[0]
    text = text if len(text) <= 80 else text[:77] + "..."
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def compile_healing(compile: Callable[[], T], what: str) -> T:
    """compile(): a numba dispatcher's compilation of `what` (a function's name, for the warnings),
    which first loads the function from numba's cache on disk when it is there, healing the cache
    on the way:

    - a cache file numba fails to load (truncated, garbled: EOFError, pickle errors, OSError, ...)
      is set aside with a warning and compile() repeated, which then builds the entry and saves
      it anew; a file that cannot be set aside (or fails again) turns that function's cache off
      for this process;
    - a cache numba fails to write (no space, read-only) is turned off for that function (with a
      warning, once per folder in a process) and compile() repeated: the code was compiled before
      the save, so the run goes on.

    Any other error is raised as it is. Every repetition follows a file set aside or a cache
    turned off, so the repetitions end; after MAX_HEALS files a failing cache is turned off."""
    with _heal_lock:
        set_aside_already: set[Path] = set()
        while True:
            try:
                return compile()
            except Exception as err:
                failure = _failure(err)
                if failure is None:
                    raise
                kind, cache, files = failure
                if kind == "save":
                    cache.disable()
                    if cache.cache_path not in _unwritable_told:
                        _unwritable_told.add(cache.cache_path)
                        why = err.strerror if isinstance(err, OSError) and err.strerror else \
                            _reason(err)
                        warn(f"compiled cache folder {cache.cache_path} cannot be written ({why}):"
                             " this process runs without saving compiled code there")
                    continue
                present = [p for p in files if p.exists()]
                if not present or set_aside_already.intersection(present) \
                        or len(set_aside_already) >= MAX_HEALS:
                    cache.disable()
                    warn(f"compiled cache entry of {what} in {cache.cache_path} does not load "
                         f"({_reason(err)}): {what} is compiled without the cache")
                    continue
                for path in present:
                    try:
                        aside = set_aside(path)
                    except FileNotFoundError:
                        continue          # set aside by another process in the meantime
                    except OSError as exc:
                        cache.disable()
                        warn(f"compiled cache entry {path} is damaged ({_reason(err)}) and cannot "
                             f"be set aside ({exc.strerror}): {what} is compiled without the "
                             "cache")
                        break
                    set_aside_already.add(path)
                    warn(f"compiled cache entry {path} is damaged ({_reason(err)}); set aside as "
                         f"{aside.name} and rebuilt")
