"""Compiled mode for the core block library (sources, math, routing, continuous, discrete, sinks):
every block type has kernels, and small diagrams that use them give the interpreted run's numbers
in compiled mode, with a fixed-step solver (whole loop compiled, or the Python loop with compiled
functions when there are zero crossings) and with an adaptive one.

Each distinct diagram costs a numba compile of its generated module, so several blocks share each
diagram and reruns reuse the module (a new stop time or a batch keeps the structure)."""
from __future__ import annotations

import os
import re
from pathlib import Path
from textwrap import dedent

import numpy as np
import pytest

import blocksim
from blockcheck import BlockCheck
from modecheck import assert_same, signal_changes
from blocksim.blocks import REGISTRY
from blocksim.engine.numba_backend import _import_name
from blocksim.errors import BlocksimError

CORE_MODULES = {f"blocksim.blocks.{m}" for m in
                ("sources", "math", "routing", "continuous", "discrete", "sinks")}

TABLE = """t,a,b
0.0,0.0,1.0
0.25,1.0,0.5
0.5,0.5,-1.0
0.75,-0.5,0.0
1.0,0.0,2.0
"""

# sources, math, routing and a plain integrator: no zero crossings, so a fixed-step compiled run
# executes its whole loop in compiled code
SOURCES_MATH = """
blocksim: 1
parameters: {amp: 1.0}
blocks:
  c:    {type: Constant, value: [1.0, -2.0]}
  st:   {type: Step, time: 0.35, initial: [0.0, 1.0], final: [1.0, -0.5]}
  rp:   {type: Ramp, slope: 2.0, start_time: 0.2, initial: -1.0}
  sn:   {type: Sine, amplitude: [$amp, 0.5], frequency: 2.0, phase: 0.3, bias: 0.1}
  ch:   {type: Chirp, f0: 0.5, f1: 4.0, duration: 0.6, method: logarithmic}
  clk:  {type: Clock}
  tab:  {type: FromFile, path: table.csv}
  tabc: {type: FromFile, path: table.csv, interpolation: cubic, columns: [a]}
  tabz: {type: FromFile, path: table.csv, interpolation: zoh, columns: [b], extrapolation: error}
  wn:   {type: WhiteNoise, period: 0.05, variance: [1.0, 4.0], seed: 7}
  mux:  {type: Mux, inputs: 3}
  dmx:  {type: Demux, sizes: [2, 3]}
  sel:  {type: Selector, indices: [2, 0, 0]}
  g:    {type: Gain, gain: [[1.0, 0.5], [-0.5, 2.0]]}
  sum:  {type: Sum, signs: "+-+"}
  prod: {type: Product, ops: "*/"}
  fn:   {type: Function, inputs: 2, expr: "[sin(u1[0]) * u2, t * u1[1] + abs(u2)]"}
  rl:   {type: RateLimiter, rising: 2.0, falling: -1.0}
  qz:   {type: Quantizer, interval: 0.25}
  int:  {type: Integrator, x0: [0.5, -0.5]}
  term: {type: Terminator}
connections:
  - sn -> mux.in1
  - c -> mux.in2
  - rp -> mux.in3
  - mux -> dmx
  - dmx.out2 -> sel
  - dmx.out1 -> g
  - g -> sum.in1
  - st -> sum.in2
  - ch -> sum.in3
  - sum -> prod.in1
  - c -> prod.in2
  - sn -> fn.in1
  - clk -> fn.in2
  - sn -> rl
  - fn -> qz
  - prod -> int
  - tab -> term
simulation: {stop_time: 1.0, solver: rk4, step: 0.01}
"""

# linear systems, the external-x0 integrator and every discrete block (no zero crossings)
LINEAR_DISCRETE = """
blocksim: 1
blocks:
  c:    {type: Constant, value: [1.0, -2.0]}
  sn:   {type: Sine, amplitude: [1.0, 0.5], frequency: 2.0, phase: 0.3}
  ch:   {type: Chirp, f0: 0.5, f1: 4.0, duration: 0.6}
  tf:   {type: TransferFunction, num: [1.0, 2.0], den: [1.0, 3.0, 2.0]}
  ss:   {type: StateSpace, A: [[0, 1], [-4, -0.4]], B: [0, 1], C: [1, 0], D: 0.5, x0: [0.2, 0]}
  fd:   {type: FilteredDerivative, N: 50.0}
  ext:  {type: Integrator, initial_condition: external}
  zoh:  {type: ZeroOrderHold, period: 0.05}
  ud:   {type: UnitDelay, period: 0.05, offset: 0.02, x0: [1.0, 2.0]}
  dif:  {type: DiscreteIntegrator, period: 0.04, gain: 2.0}
  dit:  {type: DiscreteIntegrator, period: 0.05, method: trapezoidal, upper: 0.05, x0: [0.0, 0.1]}
  dtf:  {type: DiscreteTransferFunction, period: 0.05, num: [0.5, 0.5], den: [1.0, -0.3]}
  dss:  {type: DiscreteStateSpace, period: 0.02, A: [[0.9, 0.1], [0, 0.8]], B: [[1, 0], [0, 1]],
         C: [[1, 1]], D: [[0.1, 0]], x0: [0.3, 0]}
  sc:   {type: Scope, inputs: 2}
connections:
  - sn -> tf
  - ch -> ss
  - sn -> fd
  - ch -> ext.in
  - c -> ext.x0
  - sn -> zoh
  - zoh -> ud
  - sn -> dif
  - sn -> dit
  - tf -> dtf
  - sn -> dss
  - ext -> sc.in1
  - dss -> sc.in2
simulation: {stop_time: 1.0, solver: rk4, step: 0.01}
"""

# blocks with zero crossings (the fixed-step run then uses the Python loop with compiled functions):
# kinks, switches, integrator limits and resets, and a stop condition
CROSSINGS = """
blocksim: 1
blocks:
  c:     {type: Constant, value: [0.2, -0.3]}
  sn:    {type: Sine, amplitude: [1.0, 0.7], frequency: 1.5, phase: 0.2}
  clk:   {type: Clock}
  sat:   {type: Saturation, lower: -0.5, upper: [0.6, 0.4]}
  dz:    {type: DeadZone, start: -0.2, end: 0.3}
  ab:    {type: Abs}
  sg:    {type: Sign}
  sw:    {type: Switch, threshold: 0.1, criteria: ">"}
  lim:   {type: Integrator, x0: [0.0, 0.1], lower: -0.15, upper: 0.2, reset: rising}
  ext:   {type: Integrator, initial_condition: external, reset: either}
  rly:   {type: Relay, switch_on: [0.3, 0.2], switch_off: -0.2, on_value: 1.5, off_value: -0.5}
  bnc:   {type: Integrator, initial_condition: external, reset: rising, state_port: true}
  rbnc:  {type: Gain, gain: -0.5}
  stop:  {type: StopSimulation}
  late:  {type: Step, time: 0.9}
connections:
  - sn -> sat
  - sn -> dz
  - sn -> ab
  - sn -> sg
  - sat -> sw.in1
  - sn -> sw.in2
  - dz -> sw.in3
  - sw -> lim.in
  - sg -> lim.reset
  - sn -> ext.in
  - c -> ext.x0
  - sg -> ext.reset
  - sn -> rly
  - rly -> bnc.in
  - sn -> bnc.reset
  - bnc.state -> rbnc
  - rbnc -> bnc.x0
  - late -> stop
simulation: {stop_time: 1.2, solver: rk4, step: 0.01}
"""

DIAGRAMS = {"sources_math": SOURCES_MATH, "linear_discrete": LINEAR_DISCRETE,
            "crossings": CROSSINGS}


pytestmark = pytest.mark.usefixtures("compiled_cache")


def load(tmp_path, text, mode, **sets):
    (tmp_path / "table.csv").write_text(TABLE)
    path = tmp_path / "d.yaml"
    path.write_text(dedent(text))
    overrides = {"simulation.mode": mode}
    overrides.update(sets)
    return blocksim.load(path, set=overrides)


def run(tmp_path, text, mode, batch=None, **sets):
    return blocksim.simulate(load(tmp_path, text, mode, **sets), batch=batch)


# ---- every block type has kernels ---------------------------------------------------------------

CONFIGS = {
    "FromFile": [{"path": "table.csv"}, {"path": "table.csv", "extrapolation": "error"}],
    "Function": [{"expr": "sin(u) * t"}],
    "Selector": [{"indices": [0, 0]}],
    "TransferFunction": [{"num": [1.0], "den": [1.0, 2.0]}],
    "StateSpace": [{"A": [[-1.0, 0.0], [0.0, -2.0]], "B": [[1.0, 0.0], [0.0, 1.0]], "C": [1.0, 1.0]}],
    "WhiteNoise": [{"period": 0.1}],
    "ZeroOrderHold": [{"period": 0.1}],
    "UnitDelay": [{"period": 0.1}],
    "DiscreteIntegrator": [{"period": 0.1, "method": m} for m in ("forward", "backward",
                                                                   "trapezoidal")],
    "DiscreteTransferFunction": [{"period": 0.1, "num": [1.0], "den": [1.0, -0.5]}],
    "DiscreteStateSpace": [{"period": 0.1, "A": [[0.5]], "B": [[1.0, 2.0]], "C": [1.0]}],
    "Integrator": [{}, {"lower": -1.0, "reset": "rising"},
                   {"initial_condition": "external", "reset": "either", "upper": 2.0},
                   {"state_port": True, "reset": "falling", "lower": -1.0},
                   {"state_port": True, "initial_condition": "external", "reset": "rising"}],
    "Relay": [{"switch_on": 0.5, "switch_off": -0.5, "on_value": 2.0, "off_value": -1.0},
              {"switch_on": [0.2, 1.0], "switch_off": 0.0, "on_value": [1.0, 3.0],
               "initial_state": "on"}],
}


def core_types():
    return sorted(name for name, cls in REGISTRY.items() if cls.__module__ in CORE_MODULES)


def test_every_core_block_type_has_kernels_for_what_compiled_mode_needs(tmp_path):
    (tmp_path / "table.csv").write_text(TABLE)
    types = core_types()
    assert len(types) >= 34
    for type_name in types:
        for params in CONFIGS.get(type_name, [{}]):
            check = BlockCheck(type_name, params, in_widths=2, diagram_dir=str(tmp_path))
            blk = check.block
            k = blk.kernels()
            assert k is not None, f"{type_name} {params}: no kernels"
            kind = blk.sample_time().kind
            needs = []
            if blk.output_names() and kind != "constant":
                needs.append("output")
            if blk.n_xc:
                needs.append("derivative")
            if kind == "discrete" or blk.n_xd > blk.n_modes:
                needs.append("update")
            if blk.n_modes:
                needs.append("modes")
            if blk.n_zc:
                needs.append("zero_crossings")
            for part in needs:
                fn = getattr(k, part)
                assert fn is not None, f"{type_name} {params}: no compiled {part}"
                _import_name(fn)          # a module-level function the generated code can import
            assert isinstance(k.params, tuple)
            for value in k.params:
                assert isinstance(value, (np.ndarray, int, float, bool, np.integer, np.floating)), \
                    f"{type_name}: parameter {value!r} is not an array or a number"
                if isinstance(value, np.ndarray):
                    # a read-only view is another numba type: it would compile the diagram twice
                    assert value.flags.writeable and value.flags.c_contiguous, type_name


def test_the_diagrams_below_use_every_core_block_type():
    used = set()
    for text in DIAGRAMS.values():
        used |= set(re.findall(r"type: (\w+)", text))
    assert set(core_types()) <= used, sorted(set(core_types()) - used)


# ---- compiled equals interpreted ----------------------------------------------------------------

@pytest.mark.parametrize("diagram", list(DIAGRAMS))
@pytest.mark.parametrize("solver", ["rk4", "dopri5"])
def test_compiled_equals_interpreted(tmp_path, diagram, solver):
    text = DIAGRAMS[diagram]
    a = run(tmp_path, text, "interpreted", **{"simulation.solver": solver})
    b = run(tmp_path, text, "compiled", **{"simulation.solver": solver})
    if solver == "rk4" and diagram != "crossings":
        assert b.stats.get("mode") == "compiled"     # the whole loop ran in compiled code
    assert_same(a, b, 1e-12)
    for name in a.names:
        if not name.startswith(("c.", "term.", "sc.", "stop.")) and name != "tab.out" \
                and name != "late.out":
            assert signal_changes(a, name), f"{name} never changes in this diagram"
    if diagram == "crossings":
        assert a.stopped_by == b.stopped_by == "stop"
        assert a.t[-1] == pytest.approx(0.9)
        assert [(e.block, e.index) for e in a.events] == [(e.block, e.index) for e in b.events]
        assert {e.block for e in a.events} >= {"sat", "dz", "ab", "sg", "sw", "lim", "ext",
                                               "rly", "bnc"}


def compiled_specializations():
    folder = Path(os.environ["BLOCKSIM_CACHE_DIR"]) / "compiled" / "__pycache__"
    return sorted(p.name for p in folder.glob("*.nbc"))


def test_compiled_batch_equals_interpreted_batch_and_compiles_nothing_new(tmp_path):
    """A batch of another size compiles nothing new: the loop for batches takes any size (a run
    of one member has a loop of its own, its arrays on its stack: engine/stack_arrays.py)."""
    run(tmp_path, SOURCES_MATH, "compiled", batch={"parameters.amp": [2.0, 1.0, 0.5]},
        **{"st.time": [0.3, 0.4]})
    before = compiled_specializations()
    batch = {"parameters.amp": [1.0, -0.5]}
    b = run(tmp_path, SOURCES_MATH, "compiled", batch=batch, **{"st.time": [0.3, 0.4]})
    a = run(tmp_path, SOURCES_MATH, "interpreted", batch=batch, **{"st.time": [0.3, 0.4]})
    assert_same(a, b, 1e-12)
    assert compiled_specializations() == before   # same types: batch size and vector parameters
    assert not np.array_equal(a["wn.out"][0], a["wn.out"][1])   # members draw their own noise


def test_from_file_out_of_table_stops_both_modes_and_names_the_block(tmp_path):
    for mode in ("interpreted", "compiled"):
        with pytest.raises(BlocksimError) as info:
            run(tmp_path, SOURCES_MATH, mode, **{"simulation.stop_time": 1.2})
        assert info.value.block == "tabz"
        assert "outside the table" in str(info.value)
