"""blocksim.load from a file, from YAML text and from a dict: the same diagram gives the same
numbers bit for bit, and mistakes are reported with a place the user can find ("<text>:LINE",
"<dict>" with the block and port)."""
import numpy as np
import pytest
import yaml

import blocksim
from blocksim.errors import BlocksimError

# a mass-spring-damper x'' = -k x - c x' from x = 1, with a variant and a workspace parameter
TEXT = """\
blocksim: 1
name: mass-spring-damper
parameters: {k: 4.0, c: 0.4}
blocks:
  x:  {type: Integrator, x0: 1.0}
  v:  {type: Integrator, x0: 0.0}
  f:  {type: Sum, signs: "--"}
  kx: {type: Gain, gain: $k}
  cv: {type: Gain, gain: $c}
connections:
  - v -> x
  - x -> kx
  - v -> cv
  - kx -> f.in1
  - cv -> f.in2
  - f -> v
simulation: {stop_time: 3.0, solver: dopri5, rtol: 1.0e-10, atol: 1.0e-12}
log: {signals: [x.out], every: 0.01}
variants:
  stiff: {kx.gain: 16.0}
"""


def test_text_and_dict_give_the_numbers_of_the_file(tmp_path):
    path = tmp_path / "msd.yaml"
    path.write_text(TEXT)
    from_file = blocksim.simulate(blocksim.load(path, variant="stiff", set={"parameters.c": 0.2}))
    from_text = blocksim.simulate(blocksim.load(TEXT, variant="stiff", set={"parameters.c": 0.2}))
    from_dict = blocksim.simulate(blocksim.load(yaml.safe_load(TEXT), variant="stiff",
                                                set={"parameters.c": 0.2}))
    np.testing.assert_array_equal(from_text["x.out"], from_file["x.out"])
    np.testing.assert_array_equal(from_dict["x.out"], from_file["x.out"])
    # and they are the damped oscillator's: x = e^(-z w t) (cos wd t + z w / wd sin wd t)
    w, z = 4.0, 0.2 / (2 * 4.0)
    wd = w * np.sqrt(1 - z * z)
    t = from_text.t
    exact = np.exp(-z * w * t) * (np.cos(wd * t) + z * w / wd * np.sin(wd * t))
    np.testing.assert_allclose(from_text["x.out"][:, 0], exact, atol=1e-9)


def test_a_dict_may_hold_numpy_values():
    doc = yaml.safe_load(TEXT)
    doc["blocks"]["x"]["x0"] = np.float64(2.0)
    doc["parameters"]["k"] = np.array(4.0)
    r = blocksim.simulate(blocksim.load(doc))
    assert r["x.out"][0, 0] == 2.0


def test_a_mistake_in_text_names_its_line():
    text = TEXT.replace("kx: {type: Gain, gain: $k}", "kx: {type: Gian, gain: $k}")
    line = text.splitlines().index("  kx: {type: Gian, gain: $k}") + 1
    with pytest.raises(BlocksimError, match=rf"^<text>:{line}: .*unknown block type 'Gian' "
                                            r"\(did you mean 'Gain'\?\)"):
        blocksim.simulate(blocksim.load(text))


def test_a_mistake_in_a_dict_names_the_block_and_port_without_a_line():
    doc = yaml.safe_load(TEXT)
    doc["connections"].append("cv -> f.in3")
    with pytest.raises(BlocksimError) as err:
        blocksim.simulate(blocksim.load(doc))
    message = str(err.value)
    assert message.startswith("<dict>: ") and "'in3'" in message and "f" in message
    doc = yaml.safe_load(TEXT)
    doc["blocks"]["x"]["x0"] = object()
    with pytest.raises(BlocksimError, match="the diagram dict holds object"):
        blocksim.load(doc)


def test_a_one_line_string_is_a_path():
    with pytest.raises(BlocksimError, match="^no-such.yaml: cannot read the diagram file: no such file$"):
        blocksim.load("no-such.yaml")
