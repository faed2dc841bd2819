"""Blocks of one's own (docs/user-blocks.md): the page's examples run as written, beside their
diagrams, in both modes against their closed forms; plugins from a diagram's `plugins:` and from
installed packages' entry points join the registry; a plugin that is missing or fails is reported
at the diagram's line with the plugin's own line."""
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.blocks import REGISTRY
from blocksim.errors import BlocksimError

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "user-blocks.md").read_text()
PYTHON = re.findall(r"^```python\n(.*?)^```", PAGE, re.S | re.M)
YAML = re.findall(r"^```yaml\n(.*?)^```", PAGE, re.S | re.M)


@pytest.fixture(scope="module")
def page_files(tmp_path_factory):
    """The page's block files and diagrams, written as a user would save them."""
    folder = tmp_path_factory.mktemp("user_blocks")
    (folder / "lag_block.py").write_text(PYTHON[0])
    (folder / "py_block.py").write_text(PYTHON[1])
    (folder / "lag.yaml").write_text(YAML[0])
    (folder / "clip.yaml").write_text(YAML[1])
    return folder


def test_the_pages_compiled_capable_block_runs_in_both_modes(page_files):
    """FirstOrderLag stepped to [1, 2] with tau = [0.1, 0.5]: y = final (1 - exp(-t / tau))."""
    from modecheck import assert_same
    runs = {mode: blocksim.simulate(blocksim.load(page_files / "lag.yaml",
                                                  set={"simulation.mode": mode}))
            for mode in ("interpreted", "compiled")}
    r = runs["interpreted"]
    exact = np.array([1.0, 2.0]) * (1.0 - np.exp(-r.t[:, None] / np.array([0.1, 0.5])))
    np.testing.assert_allclose(r["lag.out"], exact, rtol=0, atol=1e-10)
    assert_same(runs["compiled"], r, 0.0)
    # a plugin's kernels: its generated module keeps numba's reference counts (a helper of the
    # plugin's may return an array it was given; engine/numba_backend.Generator.own_kernels_only)
    from blocksim.engine.numba_backend import NO_REFERENCE_COUNTS
    from blocksim.engine.simulate import make_simulation
    d = blocksim.load(page_files / "lag.yaml", set={"simulation.mode": "compiled"})
    backend = make_simulation(d.compile()).backend
    assert backend.code.counts and NO_REFERENCE_COUNTS not in Path(backend.module.__file__).read_text()
    # its values are data of the run: a batch gives each member its tau
    b = blocksim.simulate(blocksim.load(page_files / "lag.yaml"), batch={"lag.tau": [0.2, 0.4]})
    np.testing.assert_allclose(b["lag.out"][1], np.array([1.0, 2.0]) * (1 - np.exp(-r.t[:, None]
                                                                                    / 0.4)),
                               atol=1e-10)


def test_the_pages_plain_python_block_runs_interpreted_and_compiled_mode_names_it(page_files):
    r = blocksim.simulate(blocksim.load(page_files / "clip.yaml"))
    np.testing.assert_allclose(r["c.out"][:, 0], np.clip(2 * np.sin(2 * np.pi * r.t), -1.5, 1.5),
                               rtol=0, atol=1e-15)
    with pytest.raises(BlocksimError, match=r"c \(Clip\): no compiled output"):
        blocksim.simulate(blocksim.load(page_files / "clip.yaml",
                                        set={"simulation.mode": "compiled"}))


def test_the_cli_describes_a_plugins_block(page_files):
    import subprocess
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "blocks", "FirstOrderLag",
                           "--plugin", str(page_files / "lag_block.py")], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert "first-order lag" in proc.stdout and "tau" in proc.stdout and "[s]" in proc.stdout


def test_an_installed_packages_entry_point_registers_its_blocks(tmp_path, monkeypatch):
    """A package installed with an entry point in blocksim.blocks: its block is found when a
    diagram names it, without a plugins: line."""
    from blocksim.blocks import plugins
    (tmp_path / "fake_blocksim_pkg.py").write_text(textwrap.dedent('''\
        import numpy as np
        from blocksim.blocks import Block, register

        @register
        class TimesThree(Block):
            """y = 3 u."""
            type_name = "TimesThree"
            summary = "y = 3 u (an installed package's block)"

            def output(self, t, xc, xd, u, y, p=None):
                np.multiply(u[0], 3.0, out=y[0])
        '''))
    info = tmp_path / "fake_blocksim_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-blocksim-pkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[blocksim.blocks]\nthree = fake_blocksim_pkg\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.forget_installed()
    try:
        doc = {"blocksim": 1, "blocks": {"c": {"type": "Constant", "value": 2.0},
                                         "k": {"type": "TimesThree"}},
               "connections": ["c -> k"], "simulation": {"stop_time": 0.1, "solver": "rk4",
                                                          "step": 0.05}}
        r = blocksim.simulate(blocksim.load(doc))
        np.testing.assert_array_equal(r["k.out"][:, 0], 6.0)
    finally:
        REGISTRY.pop("TimesThree", None)
        plugins.forget_installed()


@pytest.mark.parametrize("plugin, message", [
    ("missing.py", r"plugin file missing.py not found"),
    ("no_such_blocksim_plugin", r"plugin module 'no_such_blocksim_plugin' not found"),
    ("broken.py", r"plugin 'broken.py' failed to import at .*broken.py:2: NameError: name "
                  r"'undefined_name' is not defined"),
])
def test_a_plugin_that_cannot_be_imported_is_reported_at_its_line(tmp_path, plugin, message):
    (tmp_path / "broken.py").write_text("x = 1\ny = undefined_name\n")
    path = tmp_path / "d.yaml"
    path.write_text(f"blocksim: 1\nplugins:\n  - {plugin}\nblocks:\n  c: {{type: Constant}}\n")
    with pytest.raises(BlocksimError, match=message) as err:
        blocksim.load(path)
    assert str(err.value).startswith(f"{path}:3: ")


def test_an_unknown_type_says_where_blocks_of_ones_own_go(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text("blocksim: 1\nblocks:\n  c: {type: MyLag}\n")
    with pytest.raises(BlocksimError, match=r"unknown block type 'MyLag'.*plugins:"):
        blocksim.simulate(blocksim.load(path))


def test_a_copied_plugin_is_the_same_plugin_and_a_different_one_with_the_same_type_is_refused(
        page_files, tmp_path):
    """A project folder copied elsewhere (same plugin bytes) loads beside the original; another
    file that registers a type already taken is refused, naming both files."""
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(page_files, copy)
    for folder in (page_files, copy):
        r = blocksim.simulate(blocksim.load(folder / "lag.yaml"))
        assert r["lag.out"].shape[1] == 2
    (copy / "lag_block.py").write_text(PYTHON[0] + "\n# edited\n")
    with pytest.raises(BlocksimError, match=r"lag.yaml:\d+: plugin 'lag_block.py' failed to "
                       r"import .*registered twice \(by .*user_blocks.*lag_block.py and "
                       rf"{re.escape(str(copy / 'lag_block.py'))}\)"):
        blocksim.load(copy / "lag.yaml")


TRIPLE = '''"""y = 3 u, elementwise: a block whose kernel no run has compiled yet."""
from numba import njit

from blocksim.blocks import Block, Kernels, register


@njit(cache=True, forceinline=True, _nrt=False)
def triple_output(t, xc, xd, u, y, p):
    x = u[0]
    for b in range(y[0].shape[0]):
        for i in range(y[0].shape[1]):
            y[0][b, i] = 3.0 * x[b, i]


@register
class Triple(Block):
    """y = 3 u."""

    type_name = "TestTriple"
    summary = "y = 3 u (tests only)"

    def kernels(self):
        return Kernels(output=triple_output)
'''


def test_auto_compiles_a_run_longer_than_its_modules_compile_once_the_kernels_are(
        tmp_path, monkeypatch, capsys):
    """auto mode, the module not cached: while a block's kernel was never compiled on this
    machine (nothing in numba's disk cache), a run under AUTO_COMPILE_AFTER runs interpreted (the
    kernels' first compile may take a minute); once they are compiled, a run estimated longer
    than its module's compile (estimated_compile_time) is compiled."""
    from blocksim.engine import simulate as engine
    from blocksim.engine.mode import AUTO_COMPILE_AFTER
    monkeypatch.setenv("BLOCKSIM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BLOCKSIM_FIRST_RUN", "compile")
    monkeypatch.setenv("BLOCKSIM_MODE", "auto")
    (tmp_path / "triple_block.py").write_text(TRIPLE)
    (tmp_path / "triple.yaml").write_text(textwrap.dedent("""\
        blocksim: 1
        plugins: [triple_block.py]
        blocks:
          wave: {type: Sine, amplitude: 1.0, frequency: 1.0}
          y:    {type: TestTriple}
        connections: [wave -> y]
        simulation: {stop_time: 1.0, solver: rk4, step: 0.01}
        log: {signals: [wave.out, y.out], every: 0.01}
        """))

    def compile_estimate():
        d = blocksim.load(tmp_path / "triple.yaml", set={"simulation.mode": "compiled"})
        return engine.make_simulation(d.compile()).backend.compile_estimate()
    assert compile_estimate() is None             # the plugin's kernel is not compiled yet
    d = blocksim.load(tmp_path / "triple.yaml")
    seconds = (2.3 + AUTO_COMPILE_AFTER) / 2     # 2.3 s: a fixed-step module of two blocks
    monkeypatch.setattr(engine, "estimated_interpreted_time", lambda *args: seconds)
    first = blocksim.simulate(d)
    assert first.stats["mode"] == "interpreted"
    assert f"run is short (about {seconds:.2g} s; " in capsys.readouterr().err
    assert compile_estimate() == pytest.approx(2.3)   # 2 s + 0.15 s a block
    again = blocksim.simulate(blocksim.load(tmp_path / "triple.yaml"))
    assert again.stats["mode"] == "compiled"
    np.testing.assert_array_equal(again["y.out"], 3.0 * again["wave.out"])
    np.testing.assert_array_equal(again["y.out"], first["y.out"])
