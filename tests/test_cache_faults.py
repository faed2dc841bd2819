"""The compiled cache heals itself and is trusted only when it should be (engine/cache_guard.py):
a damaged entry is set aside and rebuilt with one warning, and a cache that cannot be written or
is not trusted is warned about and the run goes on without it, never with a traceback.

Each test runs in a copy of one cache built once for the module (a first compilation costs
seconds); the diagram's generated module is dropped from sys.modules before every run, so each
run loads the cache from disk as a new process would."""
import errno
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from numba.core import caching

import blocksim
from blocksim.engine.simulate import forget_simulators
from blocksim.diagram.spec import forget_specs
from blocksim.errors import BlocksimWarning

TINY = """\
blocksim: 1
name: tiny
blocks:
  c: {type: Constant, value: 2.0}
  g: {type: Gain, gain: 3.0}
  i: {type: Integrator, x0: 0.5}
connections: [c -> g, g -> i]
simulation: {stop_time: 1, solver: rk4, step: 0.01, mode: auto}
log: {signals: [i.out]}
"""

ROOT = Path(__file__).resolve().parents[1]


def forget(name: str) -> None:
    """Drop the generated module from this process, and the Simulators and specs the engine
    keeps for reuse by content, as a new process starts: the next run loads the module from the
    cache."""
    sys.modules.pop(name, None)
    forget_simulators()
    forget_specs()


def simulate(diagram: Path, **sets):
    """(result, messages of the BlocksimWarnings the run gave)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = blocksim.simulate(blocksim.load(diagram, set=sets))
    return result, [str(w.message) for w in caught if issubclass(w.category, BlocksimWarning)]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """One cache with the diagram's compiled code for a fixed-step run (run_fixed_one) and a run of
    the scheduler's loop (ADAPTIVE: outputs, derivatives), and the results of those runs."""
    base = tmp_path_factory.mktemp("pristine")
    diagram = base / "tiny.yaml"
    diagram.write_text(TINY)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BLOCKSIM_CACHE_DIR", str(base / "cache"))
        mp.delenv("BLOCKSIM_CACHE_SHARED", raising=False)
        fixed, told = simulate(diagram, **{"simulation.mode": "compiled"})
        assert told == [] and fixed.stats["mode"] == "compiled"
        (module,) = (base / "cache" / "compiled").glob("blocksim_diagram_*.py")
        forget(module.stem)
        adaptive, told = simulate(diagram, **{"simulation.mode": "compiled"}, **ADAPTIVE)
        assert told == []
        forget(module.stem)
    return SimpleNamespace(root=base / "cache", name=module.stem, fixed=fixed, adaptive=adaptive)


@pytest.fixture
def cache(pristine, tmp_path, monkeypatch):
    """A copy of the pristine cache as BLOCKSIM_CACHE_DIR, and the diagram beside it."""
    root = tmp_path / "cache"
    shutil.copytree(pristine.root, root)
    monkeypatch.setenv("BLOCKSIM_CACHE_DIR", str(root))
    monkeypatch.delenv("BLOCKSIM_CACHE_SHARED", raising=False)
    diagram = tmp_path / "tiny.yaml"
    diagram.write_text(TINY)
    folder = root / "compiled"
    forget(pristine.name)
    yield SimpleNamespace(root=root, folder=folder, numba=folder / "__pycache__",
                          diagram=diagram, name=pristine.name, pristine=pristine)
    forget(pristine.name)


def mode_of(result) -> str:
    """The mode of a fixed-step run (the compiled loop says so in the run's stats)."""
    return result.stats.get("mode", "interpreted")


def loaded_from_disk(name: str, function: str = "run_fixed_one") -> bool:
    """The generated module's function was loaded from numba's cache, not compiled."""
    stats = getattr(sys.modules[name], function).stats
    return sum(stats.cache_hits.values()) >= 1 and sum(stats.cache_misses.values()) == 0


def entry_of(cache, function: str, kind: str) -> Path:
    """The cache's file of that kind: the generated module (py), or the function's numba index
    (nbi) or data (nbc)."""
    if kind == "py":
        return cache.folder / f"{cache.name}.py"
    suffix = ".nbi" if kind == "nbi" else ".1.nbc"
    (path,) = cache.numba.glob(f"{cache.name}.{function}-*{suffix}")
    return path


def damage(path: Path, how: str) -> bytes:
    data = path.read_bytes()
    damaged = data[: len(data) // 2] if how == "truncate" else bytes(b ^ 0x5A for b in data)
    path.write_bytes(damaged)
    return damaged


def assert_set_aside(path: Path, damaged: bytes, message: str) -> None:
    (aside,) = path.parent.glob(path.name + ".damaged-*")
    assert aside.read_bytes() == damaged                  # renamed, not deleted
    assert str(path) in message and aside.name in message and "is damaged" in message
    assert path.exists() and path.read_bytes() != damaged


ADAPTIVE = {"simulation.solver": "lsoda"}
"""A run of the scheduler's loop over the module's entry points (lsoda: an explicit adaptive
solver runs the compiled adaptive loop, run_adaptive, radau and bdf the compiled stiff loops,
run_stiff and run_bdf): its functions (outputs, derivatives) compile in about a second each, the
fixed-step loop (run_fixed_one) in several."""


def compiled_adaptively(name: str) -> bool:
    return all(getattr(sys.modules[name], f).overloads for f in ("outputs", "derivatives"))


@pytest.mark.parametrize("how", ["truncate", "garble"])
@pytest.mark.parametrize("kind", ["py", "nbi", "nbc"])
def test_a_damaged_entry_is_set_aside_and_rebuilt_in_auto_mode(cache, kind, how):
    """Each kind of file of the cache (the generated module, numba's index and data), truncated
    or garbled: the auto run is compiled all the same (its code counts as cached) with the
    undamaged run's numbers, one warning names the file, which is set aside with its bytes; the
    next run loads the rebuilt entry from disk without a word."""
    path = entry_of(cache, "derivatives", kind)
    damaged = damage(path, how)
    result, told = simulate(cache.diagram, **ADAPTIVE)
    assert compiled_adaptively(cache.name)
    np.testing.assert_array_equal(result.t, cache.pristine.adaptive.t)
    np.testing.assert_array_equal(result["i.out"], cache.pristine.adaptive["i.out"])
    assert len(told) == 1, told
    assert_set_aside(path, damaged, told[0])
    forget(cache.name)
    again, told = simulate(cache.diagram, **ADAPTIVE)
    assert told == [] and loaded_from_disk(cache.name, "outputs") \
        and loaded_from_disk(cache.name, "derivatives")
    np.testing.assert_array_equal(again["i.out"], cache.pristine.adaptive["i.out"])


def test_a_damaged_entry_of_the_fixed_step_loop_is_set_aside_and_rebuilt(cache):
    """The fixed-step loop (run_fixed_one) loads apart from the scheduler's entry points: its
    truncated index is set aside and rebuilt there too, with the undamaged run's numbers."""
    path = entry_of(cache, "run_fixed_one", "nbi")
    damaged = damage(path, "truncate")
    result, told = simulate(cache.diagram)
    assert result.stats["mode"] == "compiled"
    np.testing.assert_array_equal(result.t, cache.pristine.fixed.t)
    np.testing.assert_array_equal(result["i.out"], cache.pristine.fixed["i.out"])
    assert len(told) == 1, told
    assert_set_aside(path, damaged, told[0])
    assert len(sys.modules[cache.name].run_fixed_one.overloads) == 1   # typed as the loop calls it
    forget(cache.name)
    again, told = simulate(cache.diagram)
    assert told == [] and mode_of(again) == "compiled" and loaded_from_disk(cache.name)


def test_an_index_numba_discards_on_its_own_is_rebuilt_without_a_word(cache):
    """An index of another numba version (its first pickle, the version, differs): numba itself
    ignores it and compiles anew, and blocksim goes along without a warning; the rewritten index
    then loads."""
    import pickle
    path = entry_of(cache, "derivatives", "nbi")
    path.write_bytes(pickle.dumps("0.0.0") + b"whatever follows")
    result, told = simulate(cache.diagram, **ADAPTIVE)
    assert told == [] and compiled_adaptively(cache.name)
    np.testing.assert_array_equal(result["i.out"], cache.pristine.adaptive["i.out"])
    assert not list(cache.numba.glob("*.damaged-*"))
    forget(cache.name)
    simulate(cache.diagram, **ADAPTIVE)
    assert loaded_from_disk(cache.name, "derivatives")


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a folder of mode 555")
def test_a_read_only_cache_folder_runs_without_it(cache):
    before = files_of(cache.root)
    cache.folder.chmod(0o555)
    try:
        result, told = simulate(cache.diagram)
    finally:
        cache.folder.chmod(0o755)
    assert mode_of(result) == "interpreted"          # auto: not cached, a short run
    assert told == [f"compiled cache not used: {cache.folder} cannot be written (Permission "
                    "denied); this run goes on without it (compiled code is then built anew in "
                    "every run)"]
    assert files_of(cache.root) == before


@pytest.mark.parametrize("code, mode", [(errno.EACCES, "compiled"), (errno.EROFS, "auto"),
                                        (errno.ENOSPC, "auto")])
def test_a_cache_folder_that_cannot_be_written_runs_without_it(cache, monkeypatch, code, mode):
    """The folder's refusal simulated (as root, a mode 555 folder does not refuse): every file
    blocksim opens in the cache fails with a read-only, no-permission or no-space error. A
    compiled run is then compiled without the cache, with the cached run's numbers exactly."""
    real_open = os.open

    def refusing_open(path, *args, **kwargs):
        if str(path).startswith(str(cache.root)):
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, *args, **kwargs)
    before = files_of(cache.root)
    with monkeypatch.context() as patch:
        patch.setattr(os, "open", refusing_open)
        result, told = simulate(cache.diagram, **{"simulation.mode": mode}, **ADAPTIVE)
    assert told == [f"compiled cache not used: {cache.folder} cannot be written "
                    f"({os.strerror(code)}); this run goes on without it (compiled code is then "
                    "built anew in every run)"]
    module = sys.modules[cache.name]
    assert module.derivatives.stats.cache_path is None            # built without the cache
    if mode == "compiled":
        assert compiled_adaptively(cache.name)
        np.testing.assert_array_equal(result["i.out"], cache.pristine.adaptive["i.out"])
    else:                                    # auto: not cached, a short run: interpreted
        assert not module.derivatives.overloads
    assert files_of(cache.root) == before


def test_a_cache_that_cannot_save_compiled_code_warns_and_runs(cache, monkeypatch):
    """numba's own save failing (no space left while it writes its index or data): one warning
    naming the folder (not one per function: outputs, derivatives and updates all fail to save),
    and the compiled run goes on with the same numbers."""
    for path in cache.numba.iterdir():
        path.unlink()

    def full(self, filepath):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), filepath)
    monkeypatch.setattr(caching.IndexDataCacheFile, "_open_for_write", full)
    result, told = simulate(cache.diagram, **{"simulation.mode": "compiled"}, **ADAPTIVE)
    np.testing.assert_array_equal(result["i.out"], cache.pristine.adaptive["i.out"])
    assert told == [f"compiled cache folder {cache.numba} cannot be written (No space left on "
                    "device): this process runs without saving compiled code there"]
    assert not list(cache.numba.glob("*.nbi"))


def test_a_cache_dir_that_is_a_file_runs_without_it(cache, monkeypatch):
    path = cache.root.parent / "not-a-folder"
    path.write_bytes(b"a file\n")
    monkeypatch.setenv("BLOCKSIM_CACHE_DIR", str(path))
    result, told = simulate(cache.diagram)
    assert mode_of(result) == "interpreted"
    assert told == [f"compiled cache not used: {path} is a file, not a folder; this run goes "
                    "on without it (compiled code is then built anew in every run)"]
    assert path.read_bytes() == b"a file\n"


def test_the_command_line_says_so_in_one_line_and_succeeds(cache, tmp_path):
    path = tmp_path / "not-a-folder"
    path.write_bytes(b"")
    env = dict(os.environ, BLOCKSIM_CACHE_DIR=str(path), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate", str(cache.diagram),
                           "--quiet"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    assert warned == [f"warning: compiled cache not used: {path} is a file, not a folder; this "
                      "run goes on without it (compiled code is then built anew in every run)"]
    assert "Traceback" not in done.stderr


def test_a_world_writable_cache_folder_is_refused_unless_shared_with_the_sticky_bit(
        cache, monkeypatch):
    cache.root.chmod(0o777)
    result, told = simulate(cache.diagram)
    assert mode_of(result) == "interpreted"
    assert len(told) == 1 and told[0].startswith(
        f"compiled cache not used: {cache.root} is writable by every user (mode 777), so anyone "
        "could put code there that would run as you")
    assert "BLOCKSIM_CACHE_SHARED=group" in told[0]
    forget(cache.name)
    monkeypatch.setenv("BLOCKSIM_CACHE_SHARED", "group")     # without the sticky bit: still not
    result, told = simulate(cache.diagram)
    assert mode_of(result) == "interpreted" and "writable by every user" in told[0]
    forget(cache.name)
    cache.root.chmod(0o1777)
    result, told = simulate(cache.diagram)
    assert told == [] and mode_of(result) == "compiled" and loaded_from_disk(cache.name)
    np.testing.assert_array_equal(result["i.out"], cache.pristine.fixed["i.out"])


def test_a_world_writable_file_is_refused_even_when_shared(cache, monkeypatch):
    index = entry_of(cache, "run_fixed_one", "nbi")
    index.chmod(0o666)
    monkeypatch.setenv("BLOCKSIM_CACHE_SHARED", "group")
    result, told = simulate(cache.diagram)
    assert mode_of(result) == "interpreted"
    assert len(told) == 1 and told[0].startswith(
        f"compiled cache not used: {index} is writable by every user (mode 666)")


def test_a_cache_folder_of_another_user_is_refused_unless_shared_with_a_group(cache, monkeypatch):
    """The owner check simulated: this process claims another uid, so the cache's folders belong
    to someone else; BLOCKSIM_CACHE_SHARED=group trusts them while their group is one of ours."""
    me = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: me + 4242)
    result, told = simulate(cache.diagram)
    assert mode_of(result) == "interpreted"
    assert len(told) == 1 and told[0].startswith(f"compiled cache not used: {cache.root} belongs "
                                                 f"to user ") and "not to you" in told[0]
    forget(cache.name)
    monkeypatch.setenv("BLOCKSIM_CACHE_SHARED", "group")
    result, told = simulate(cache.diagram)
    assert told == [] and mode_of(result) == "compiled" and loaded_from_disk(cache.name)
    forget(cache.name)
    gid = cache.root.stat().st_gid
    monkeypatch.setattr(os, "getgid", lambda: gid + 4242)
    monkeypatch.setattr(os, "getgroups", lambda: [gid + 4243])
    result, told = simulate(cache.diagram)
    assert mode_of(result) == "interpreted"
    assert len(told) == 1 and f"and to group {gid}, which is not one of your groups" in told[0]


def test_an_unknown_sharing_value_is_warned_about_and_the_strict_rule_holds(cache, monkeypatch):
    monkeypatch.setenv("BLOCKSIM_CACHE_SHARED", "everyone")
    cache.root.chmod(0o1777)
    result, told = simulate(cache.diagram)
    assert mode_of(result) == "interpreted"
    assert told[0] == ("BLOCKSIM_CACHE_SHARED must be 'group' or unset, not 'everyone': the "
                       "compiled cache is trusted only when it is your own")
    assert len(told) == 2 and "writable by every user" in told[1]


def test_a_generated_module_that_is_not_even_text_is_healed_too(cache):
    """The generated module is compared as bytes: a file that is not UTF-8 is damage too."""
    path = entry_of(cache, "run_fixed", "py")
    path.write_bytes(b"\xff\xfe\x00garbage")
    result, told = simulate(cache.diagram)
    assert mode_of(result) == "compiled" and len(told) == 1
    assert "its text is not the generated code" in told[0]
    assert_set_aside(path, b"\xff\xfe\x00garbage", told[0])


def test_a_cache_root_whose_parents_do_not_exist_yet_is_made_with_them(tmp_path):
    # ~/.cache does not exist on a fresh account: the cache root is made with its parents (it
    # was refused, "cannot be created", and every compiled run built its code anew)
    from blocksim.engine import cache_guard
    folder = tmp_path / "home" / ".cache" / "blocksim" / "compiled"
    assert cache_guard.prepare_folder(folder, "private") is None
    assert folder.is_dir() and (folder.parent.stat().st_mode & 0o777) == 0o700
