"""Blocks from outside the library: a diagram's `plugins:` (modules or .py files that register
blocks when imported) and installed packages that declare an entry point in the group
`blocksim.blocks` (each entry point names a module to import, or a function to call, that
registers blocks). They join the one REGISTRY, so they are listed, documented and checked as the
library's own blocks are (docs/user-blocks.md)."""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import traceback
from pathlib import Path

from ..errors import BlocksimError, SourceLoc

ENTRY_POINT_GROUP = "blocksim.blocks"

_installed_loaded = False


def load_plugin(name: str, base_dir: Path, where: SourceLoc | None = None) -> None:
    """Import one plugin: a module name (`my_package.blocks`), or a Python file (a path ending in
    .py, relative to base_dir: the diagram's folder). A file is imported once per session under a
    name derived from its contents, so a copy of it (a copied project folder) is the same plugin,
    while a different file that registers a type already taken is refused. Failures are
    BlocksimErrors at `where` that say where in the plugin the import failed (no traceback)."""
    if not isinstance(name, str) or not name.strip():
        raise BlocksimError(f"a plugin is a module name or a .py file, not {name!r}", where=where)
    name = name.strip()
    try:
        if name.endswith(".py"):
            path = Path(name) if Path(name).is_absolute() else Path(base_dir) / name
            path = path.resolve()
            if not path.is_file():
                raise BlocksimError(f"plugin file {name} not found (looked for {path})", where=where)
            module = _module_name(path)
            if module not in sys.modules:
                spec = importlib.util.spec_from_file_location(module, path)
                loaded = importlib.util.module_from_spec(spec)
                sys.modules[module] = loaded
                try:
                    spec.loader.exec_module(loaded)
                except BaseException:
                    del sys.modules[module]
                    raise
        else:
            importlib.import_module(name)
    except BlocksimError:
        raise
    except ModuleNotFoundError as err:
        if err.name and name.split(".")[0] == err.name.split(".")[0]:
            raise BlocksimError(f"plugin module '{name}' not found (install it, or name a .py "
                                "file relative to the diagram)", where=where) from None
        raise _failed(name, err, where) from None
    except Exception as err:          # the plugin's own code failed: say where, briefly
        raise _failed(name, err, where) from None


def _module_name(path: Path) -> str:
    """The module name of plugin file `path`: its stem and a hash of its bytes."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"blocksim_plugin_{stem}_{digest}"


def _failed(name: str, err: BaseException, where: SourceLoc | None) -> BlocksimError:
    """The error of a plugin whose import raised err: the plugin's line that raised and what."""
    frames = traceback.extract_tb(err.__traceback__)
    own = [f for f in frames if "importlib" not in f.filename]
    at = f" at {own[-1].filename}:{own[-1].lineno}" if own else ""
    return BlocksimError(f"plugin '{name}' failed to import{at}: {type(err).__name__}: {err}",
                         where=where)


def load_plugins(names, base_dir: Path, where_of) -> None:
    """Import a diagram's `plugins:` list; where_of(index) locates item `index`."""
    for k, name in enumerate(names or []):
        load_plugin(name, base_dir, where_of(k))


def load_installed() -> None:
    """Import the plugins of installed packages (entry points in the group `blocksim.blocks`),
    once per session: each names a module, or a callable that is called without arguments."""
    global _installed_loaded
    if _installed_loaded:
        return
    _installed_loaded = True
    from importlib.metadata import entry_points
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = ep.load()
            if callable(loaded):
                loaded()
        except Exception as err:
            raise _failed(f"{ep.name} = {ep.value} (entry point of "
                          f"{getattr(ep.dist, 'name', 'an installed package')})", err,
                          None) from None


def forget_installed() -> None:
    """Let load_installed look at the installed packages again (after installing one)."""
    global _installed_loaded
    _installed_loaded = False
