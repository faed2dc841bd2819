"""A run folder written whole or not at all: everything goes into a staging folder beside the
target, which takes the target's place in one rename when the command is done. A reader (or a
crash, a kill -9, a full disk) sees the earlier run or the new one, never a mix; with --force the
new run replaces the whole earlier folder (no stale variants or figures are left beside it)."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
from pathlib import Path

from ..errors import BlocksimError
from ..reading.located_yaml import os_reason

_RENAME_EXCHANGE = 2         # Linux renameat2 flag: swap two paths atomically
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths a and b in one atomic step (Linux renameat2); False where the system
    cannot."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]
    return renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0


OUTPUT_FILES = ("metrics.json", "report.md", "identified_robot.yaml", "excitation.yaml",
                "excitation_run.yaml", "metrics_diff.csv", "metrics_diff.json", "model.npz",
                "model.json", "margins.json", "report.html", "plotly.min.js")
OUTPUT_SUFFIXES = (".png", ".svg", ".pdf", ".gif")
OUTPUT_FOLDERS = ("figures", "data")


def foreign_entries(folder: Path) -> list[str]:
    """The entries of `folder` that blocksim did not write: a run folder holds metrics.json,
    figures, a folder per variant (with its run.json), identify's report, robot file,
    figures/ and data/, and linearize's model and margins; anything else is the user's, which --force must not delete."""
    foreign = []
    for entry in sorted(folder.iterdir()):
        if entry.is_dir():
            if entry.name in OUTPUT_FOLDERS or (entry / "run.json").is_file():
                continue
        elif entry.name in OUTPUT_FILES or entry.suffix.lower() in OUTPUT_SUFFIXES:
            continue
        foreign.append(entry.name)
    return foreign


class RunFolder:
    """The output folder of a command: `staging` is where to write; commit() puts it in place.

    path: the folder the user named. It must be new or empty, or `replace` (--force) allows an
    earlier run there, which commit() replaces as a whole. Nothing is written to `path` before
    commit(); abort() removes the staging folder and leaves `path` as it was."""

    def __init__(self, path: str | Path, replace: bool = False):
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise BlocksimError(f"--out {path} exists and is not a folder")
        if self.path.is_dir() and any(self.path.iterdir()):
            if not replace:
                raise BlocksimError(f"--out {path} is not empty; nothing was written (use --force "
                                    "to replace the run in it, or choose a new folder)")
            foreign = foreign_entries(self.path)
            if foreign:
                raise BlocksimError(f"--out {path} holds files blocksim did not write "
                                    f"({', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''})"
                                    "; --force replaces a run folder whole, so nothing was written "
                                    "(move them, or choose a new folder)")
        parent = self.path.parent if str(self.path.parent) else Path(".")
        try:
            parent.mkdir(parents=True, exist_ok=True)
            self.staging = parent / f".{self.path.name}.partial-{os.getpid()}"
            if self.staging.exists():
                shutil.rmtree(self.staging)
            self.staging.mkdir()
        except OSError as err:
            raise BlocksimError(f"--out {path}: {os_reason(err, self.path)}") from None
        self.committed = False

    def final(self, written: Path) -> Path:
        """Where a file written under `staging` will be after commit()."""
        return self.path / Path(written).relative_to(self.staging)

    def commit(self) -> Path:
        """Put the staging folder in place of `path` (swapping atomically with an earlier run
        where the system can, else renaming it aside first), then delete the earlier run."""
        try:
            if not self.path.exists():
                os.rename(self.staging, self.path)
            elif _exchange(self.staging, self.path):
                shutil.rmtree(self.staging, ignore_errors=True)     # now holds the earlier run
            else:
                aside = self.path.parent / f".{self.path.name}.replaced-{os.getpid()}"
                os.rename(self.path, aside)
                os.rename(self.staging, self.path)
                shutil.rmtree(aside, ignore_errors=True)
        except OSError as err:
            raise BlocksimError(f"--out {self.path}: {os_reason(err, self.path)}; the new run is in "
                                f"{self.staging}") from None
        self.committed = True
        return self.path

    def abort(self) -> None:
        """Remove what was staged; `path` stays as it was."""
        if not self.committed:
            shutil.rmtree(self.staging, ignore_errors=True)
