"""A run that diverges names the block and the state, at the block's line, for every solver."""
import re

import pytest

import blocksim
from blocksim.errors import BlocksimError

BLOWUP = """
blocksim: 1
blocks:
  sq: {type: Function, expr: "u * u"}
  x:  {type: Integrator, x0: 1.0}
connections: [x -> sq, sq -> x]
simulation: {stop_time: 2.0, solver: SOLVER}
"""


@pytest.mark.parametrize("solver", ["dopri5", "dop853", "rk23", "radau", "bdf", "rk4", "euler"])
def test_a_solution_that_runs_away_is_blamed_on_its_block_and_state(tmp_path, solver):
    """x' = x^2, x(0) = 1: x = 1 / (1 - t) leaves every number at t = 1 s."""
    path = tmp_path / "blowup.yaml"
    path.write_text(BLOWUP.replace("SOLVER", solver))
    with pytest.raises(BlocksimError) as caught:
        blocksim.simulate(blocksim.load(path))
    err = caught.value
    assert err.block == "x" and err.where.line == 5
    assert "x[0]" in err.message
    # times near the blow-up, written without floating-point noise (at most 12 digits)
    times = [float(t) for t in re.findall(r"t = ([0-9.e+-]+) s", err.message)]
    assert times and all(0.99 < t < 1.1 for t in times)       # euler lags to 1.03 s
    assert all(len(t.replace(".", "").lstrip("0")) <= 12
               for t in re.findall(r"t = ([0-9.]+) s", err.message))
