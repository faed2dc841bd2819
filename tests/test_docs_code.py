"""Every code block of the README and of docs/ works as written: each YAML diagram loads, checks
and runs; each Python block runs (in a fresh interpreter, in a scratch folder that sees the
examples); each `python cli.py ...` command parses and names files that exist."""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import blocksim
from blocksim.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def fenced(language):
    """(file name, line, text) of every ```language block in the docs."""
    found = []
    for path in DOCS:
        text = path.read_text()
        for m in re.finditer(rf"^```{language}\n(.*?)^```", text, re.S | re.M):
            found.append(pytest.param(m.group(1), id=f"{path.name}:{text[:m.start()].count(chr(10)) + 1}"))
    return found


def commands():
    """Every indented `python cli.py ...` or `python examples/...` line of the docs."""
    found = []
    for path in DOCS:
        for k, line in enumerate(path.read_text().splitlines(), 1):
            m = re.match(r"^    (?:.*&& )?(python (?:cli\.py|examples/)\S*.*?)\s*(?:#.*)?$", line)
            if m:
                found.append(pytest.param(m.group(1), id=f"{path.name}:{k}"))
    return found


@pytest.mark.parametrize("text", fenced("yaml"))
def test_every_yaml_diagram_in_the_docs_runs(text):
    if "plugins:" in text:
        pytest.skip("a diagram with blocks of its own: tests/test_user_blocks.py runs it beside them")
    if text.startswith("study: 1"):
        pytest.skip("a study file: tests/test_study.py checks the docs' study files")
    d = blocksim.load(text)
    r = blocksim.simulate(d)
    assert len(r.t) > 1 and all(len(r[name]) == len(r.t) for name in r.names)


@pytest.mark.parametrize("code", fenced("python"))
def test_every_python_block_in_the_docs_runs(code, tmp_path):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    (tmp_path / "snippet.py").write_text(code)         # a file, as a user's module would be
    proc = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("line", commands())
def test_every_command_in_the_docs_parses_and_names_files_that_exist(line):
    words = shlex.split(line)[1:]
    if words[0] != "cli.py":
        assert (ROOT / words[0]).is_file(), f"{words[0]} does not exist"
        return
    args = build_parser().parse_args(words[1:])
    for key in ("diagram", "config", "run", "runs"):
        value = getattr(args, key, None)
        for item in value if isinstance(value, list) else [value]:
            if item is not None and str(item).endswith((".yaml", ".yml")):
                assert (ROOT / item).is_file(), f"{item} does not exist"
