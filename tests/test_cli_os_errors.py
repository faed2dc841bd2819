"""The operating system's refusals on the command line: a diagram that cannot be read, an output
that cannot be written. Each is one line `error: PATH: reason` (or `error: --out PATH: reason`)
with exit 1 and no traceback. A full disk while a run is saved: tests/test_saved_runs.py.

The suite may run as root, which reads and writes through any mode bits: the permission cases
are real ones for other users and a simulated refusal (a patched call raising the OSError the
system gives) for everyone.
"""
import errno
import os
from pathlib import Path

import pytest

from blocksim.cli import main

ROOT = Path(__file__).resolve().parents[1]
DIAGRAM = ROOT / "examples" / "mass_spring_damper.yaml"
AS_ROOT = pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes a folder of mode 000")


def run(capsys, *argv) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def refuse(monkeypatch, cls, method, path, code):
    """Make `cls.method` raise the OSError of errno `code` for `path` (and work as usual elsewhere)."""
    real = getattr(cls, method)

    def refused(self, *args, **kwargs):
        if Path(self) == Path(path):
            raise OSError(code, os.strerror(code), str(self))
        return real(self, *args, **kwargs)
    monkeypatch.setattr(cls, method, refused)


@pytest.mark.parametrize("command", ["check", "simulate"])
def test_a_diagram_that_cannot_be_read(tmp_path, capsys, command):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder")
    cases = {tmp_path: "is a folder, not a file",
             tmp_path / "gone" / "d.yaml": f"no such folder {tmp_path / 'gone'}",
             a_file / "d.yaml": f"{a_file} is a file, not a folder"}
    for path, reason in cases.items():
        assert run(capsys, command, path) == (
            1, f"error: {path}: cannot read the diagram file: {reason}\n")


def test_a_diagram_without_permission_to_read_it(tmp_path, capsys, monkeypatch):
    path = tmp_path / "d.yaml"
    path.write_text(DIAGRAM.read_text())
    refuse(monkeypatch, Path, "open", path, errno.EACCES)
    assert run(capsys, "check", path) == (
        1, f"error: {path}: cannot read the diagram file: permission denied\n")


@AS_ROOT
def test_a_diagram_of_mode_000(tmp_path, capsys):
    path = tmp_path / "d.yaml"
    path.write_text(DIAGRAM.read_text())
    path.chmod(0)
    assert run(capsys, "check", path) == (
        1, f"error: {path}: cannot read the diagram file: permission denied\n")


def test_simulate_out_on_a_read_only_file_system(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    refuse(monkeypatch, Path, "mkdir", tmp_path / ".out.partial-{}".format(os.getpid()),
           errno.EROFS)
    assert run(capsys, "simulate", DIAGRAM, "--quiet", "--out", out) == (
        1, f"error: --out {out}: Read-only file system\n")
    assert list(tmp_path.iterdir()) == []


@AS_ROOT
def test_simulate_out_in_a_folder_without_permission(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    code, err = run(capsys, "simulate", DIAGRAM, "--quiet", "--out", locked / "out")
    assert (code, err) == (1, f"error: --out {locked / 'out'}: permission denied\n")


def test_simulate_out_under_a_file(tmp_path, capsys):
    """A file where a folder of --out must be, one level up or two: that file is named."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder")
    for out in (a_file / "out", a_file / "sub" / "out"):
        code, err = run(capsys, "simulate", DIAGRAM, "--quiet", "--out", out)
        assert (code, err) == (1, f"error: --out {out}: {a_file} is a file, not a folder\n")
    assert a_file.read_text() == "not a folder"


@pytest.mark.parametrize("command", [["blocks", "--markdown"], ["metrics", "--markdown"],
                                     ["draw", DIAGRAM]])
def test_a_written_file_under_a_file(tmp_path, capsys, command):
    """blocks/metrics --markdown --out and draw --out: a file where a folder must be."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder")
    assert run(capsys, *command, "--out", a_file / "x.svg") == (
        1, f"error: {a_file}: is a file, not a folder\n")
    assert run(capsys, *command, "--out", a_file / "sub" / "x.svg") == (
        1, f"error: {a_file / 'sub'}: {a_file} is a file, not a folder\n")
    assert a_file.read_text() == "not a folder"


def test_a_written_file_that_is_a_folder_or_in_a_read_only_place(tmp_path, capsys, monkeypatch):
    assert run(capsys, "metrics", "--markdown", "--out", tmp_path) == (
        1, f"error: {tmp_path}: is a folder, not a file\n")
    target = tmp_path / "metrics.md"
    refuse(monkeypatch, Path, "write_text", target, errno.EROFS)
    assert run(capsys, "metrics", "--markdown", "--out", target) == (
        1, f"error: {target}: Read-only file system\n")
    refuse(monkeypatch, Path, "write_text", target, errno.EACCES)
    assert run(capsys, "metrics", "--markdown", "--out", target) == (
        1, f"error: {target}: permission denied\n")
