"""`python cli.py linearize`: the model, the margins and the Bode plot in --out, the printed
table, and errors as one located line with exit status 1 (docs/analysis.md)."""
import json
import math

import numpy as np
import pytest

from blocksim.cli import main

CURRENT_LOOP = "examples/analysis/current_loop.yaml"


def test_linearize_writes_the_model_margins_and_bode_plot(tmp_path, capsys):
    out = tmp_path / "lin"
    assert main(["linearize", CURRENT_LOOP, "--variant", "delay", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "3 states, 1 inputs, 1 outputs; discrete, period 0.0001 s; at t = 0 s" in printed
    assert "the loop at pi.vq:\nphase margin           37.42 deg\n" \
           "gain crossover         964.7 Hz\ngain margin            4.467 dB\n" \
           "phase crossover        1662 Hz\ndelay margin           0.1078 ms\n" in printed
    assert sorted(p.name for p in out.iterdir()) == ["bode.png", "bode.svg", "margins.json",
                                                     "model.json", "model.npz"]
    margins = json.loads((out / "margins.json").read_text())
    assert round(margins["phase_margin"], 2) == 37.42
    assert round(margins["gain_margin_frequency"], 1) == 1661.7
    model = json.loads((out / "model.json").read_text())
    assert model["states"] == ["motor.i[0]", "pi.zq[0]", "delay.xd[0]"]
    assert model["loop"] == "pi.vq" and model["dt"] == 1e-4
    with np.load(out / "model.npz", allow_pickle=False) as npz:
        assert npz["A"] == pytest.approx(np.array(model["A"]))
        assert list(npz["inputs"]) == ["pi.vq"] and float(npz["dt"]) == 1e-4
    # --force replaces the earlier linearisation whole
    assert main(["linearize", CURRENT_LOOP, "--out", str(out), "--force"]) == 0
    assert round(json.loads((out / "margins.json").read_text())["phase_margin"], 2) == 72.15


def test_a_model_that_is_no_loop_has_no_margins(tmp_path, capsys):
    out = tmp_path / "lin"
    assert main(["linearize", CURRENT_LOOP, "--opening", "motor.i", "--input", "pi.vq",
                 "--output", "motor.i", "--out", str(out)]) == 0
    assert "no margins: the model is not a loop seen from one point" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["bode.png", "bode.svg", "model.json",
                                                     "model.npz"]


@pytest.mark.parametrize("args, message", [
    (["--output", "pi.vqq"], "error: --output: block 'pi', port 'vqq': CurrentController has no "
                             "output 'vqq' (did you mean 'vq'?); outputs: vq\n"),
    (["--at", "soon"], "error: --at: analysis.at.time: a time must be a number, got 'soon'\n"),
    (["--variant", "dealy"], f"error: {CURRENT_LOOP}:35: unknown variant 'dealy'; did you mean "
                             "'delay'? (this diagram's variants: no_delay, delay)\n"),
])
def test_bad_options_are_one_located_line(args, message, capsys):
    assert main(["linearize", CURRENT_LOOP, *args]) == 1
    assert capsys.readouterr().err == message


def test_the_double_pendulum_example_prints_and_writes_its_modes(tmp_path, capsys):
    out = tmp_path / "lin"
    assert main(["linearize", "examples/analysis/double_pendulum.yaml", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "4 states, 2 inputs, 2 outputs; continuous; at t = 0 s\n" \
           "linearised exactly from their own dynamics: plant (Manipulator)\n" \
           "modes (natural frequency, damping ratio): 0.381526 Hz (0), 0.921086 Hz (0)\n" in printed
    assert json.loads((out / "model.json").read_text())["exact"] == ["plant (Manipulator)"]
    modes = json.loads((out / "model.json").read_text())["modes"]
    omega = [2 * math.pi * m["frequency"] for m in modes]
    assert omega == pytest.approx([math.sqrt(9.81 * (2 - math.sqrt(2))),
                                   math.sqrt(9.81 * (2 + math.sqrt(2)))], rel=1e-9)
    assert [m["damping"] for m in modes] == [0.0, 0.0]
    assert sorted(p.name for p in out.iterdir()) == ["bode.png", "bode.svg", "model.json",
                                                     "model.npz"]


def test_the_position_loop_example_prints_its_trimmed_margins(tmp_path, capsys):
    out = tmp_path / "lin"
    assert main(["linearize", "examples/analysis/position_loop.yaml", "--variant", "reference",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "10 states, 1 inputs, 1 outputs; discrete, period 0.001 s; at t = 0 s (trimmed: an " \
           "equilibrium)\n" in printed
    assert "the loop at zoh.out[0]:\nphase margin           46.25 deg\n" \
           "gain crossover         1.687 Hz\n" in printed
    model = json.loads((out / "model.json").read_text())
    assert model["trimmed"]["states"]["plant"] == [0.0, 0.0, 0.0, 0.0]
    assert (out / "bode.png").stat().st_size > 10_000
