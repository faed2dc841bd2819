"""Each block's crossing directions apply to its own functions: the run's direction vector is laid
out as its crossing functions are (by the blocks' columns, in file order), also when a block with
crossings reads one that comes later in the file, so that they run in another order."""
import numpy as np

import blocksim

# the relay (rising on, falling off) comes first in the file but runs after the Sign it reads
# (either direction): the relay switches on at each rise of sign(sin 2 pi t) and off at each fall
TEXT = """
blocksim: 1
blocks:
  rl: {type: Relay, switch_on: 0.5, switch_off: -0.5}
  s:  {type: Sine, amplitude: 1.0, frequency: 1.0, phase: 0.3}
  sg: {type: Sign}
  x:  {type: Integrator}
connections: [s -> sg, sg -> rl, s -> x]
simulation: {stop_time: 2.0, solver: dopri5, max_step: 0.01}
log: {signals: [sg.out, rl.out], every: 0.001}
"""


def test_directions_follow_the_functions_columns(tmp_path):
    path = tmp_path / "order.yaml"
    path.write_text(TEXT)
    r = blocksim.simulate(blocksim.load(path))
    offs = [e.t for e in r.events if e.block == "rl" and e.index == 1]
    ons = [e.t for e in r.events if e.block == "rl" and e.index == 0]
    # sin(2 pi t + 0.3) falls through zero at (pi - 0.3) / 2 pi + k, rises at (2 pi - 0.3) / 2 pi + k
    np.testing.assert_allclose(offs, (np.pi - 0.3) / (2 * np.pi) + np.arange(2), atol=1e-9)
    np.testing.assert_allclose(ons, (2 * np.pi - 0.3) / (2 * np.pi) + np.arange(2), atol=1e-9)
    positive = r["sg.out"][:, 0] > 0
    np.testing.assert_array_equal(r["rl.out"][:, 0], positive.astype(float))
