"""Blocks in plain Python for a serial chain with mimic joints on it (interpreted runs only).

The library's robot blocks take chains whose joints are all free; a URDF chain with mimic joints
on it has fewer coordinates than joints. These blocks run `blocksim.models.coupled.CoupledRobot`:
the chain in its independent joints q (rad), its dynamics M_r = G^T M G, c_r = G^T c from the
whole chain's kernels (docs/robot-files.md, "Mimic joints on the chain"). Every port is in the
independent joints (`CoupledRobot.joint_names`), torques in N m, the energy in J.
"""
from pathlib import Path

import numpy as np

from blocksim.blocks import Block, Param, register
from blocksim.errors import BlocksimError, ParameterError, WidthError
from blocksim.models.coupled import CoupledRobot

CHAIN_PARAMS = {
    "urdf": Param(units="-", doc="the URDF file, relative to the diagram", kind="str"),
    "tip_link": Param("", "-", "the chain's last link ('': the URDF's one moving branch)", kind="str"),
    "rotor_inertia": Param(False, "-", "add the transmissions' reflected rotor inertia N^2 Jm",
                           kind="bool"),
}


def coupled_arm(block, v) -> CoupledRobot:
    """The CoupledRobot of a block's urdf and tip_link (errors located at the block)."""
    try:
        return CoupledRobot.from_urdf(Path(block.diagram_dir or ".") / v.urdf,
                                      tip_link=v.tip_link or None, rotor_inertia=v.rotor_inertia)
    except BlocksimError as err:
        raise err.located(block=block.name)


def _joint_rows(block, key, n, v):
    """Parameter `key` (1 or n values per member) as (B, n)."""
    value = np.asarray(getattr(v, key), dtype=float).reshape(v.batch, -1)
    if value.shape[1] not in (1, n):
        raise ParameterError(f"'{key}' needs 1 or {n} values (one per independent joint), got "
                             f"{value.shape[1]}", block=block.name)
    return np.broadcast_to(value, (v.batch, n))


@register
class CoupledArm(Block):
    """The chain's motion under the torques on its independent joints: qdd = M_r^-1 (tau - c_r),
    the state (q, qd); energy = kinetic + potential (J), constant when tau = 0."""

    type_name = "CoupledArm"
    summary = "a serial chain with mimic joints on it, in its independent joints (plain Python)"
    params = {**CHAIN_PARAMS,
              "q0": Param(0.0, "rad", "initial positions of the independent joints"),
              "qd0": Param(0.0, "rad/s", "initial rates of the independent joints")}
    inputs = ("tau",)
    outputs = ("q", "qd", "energy")
    direct_feedthrough = False
    sample = "continuous"
    port_units = {"energy": "J"}

    def setup(self):
        self.arm = coupled_arm(self, self.p)
        self.n = self.arm.n
        self.q0 = _joint_rows(self, "q0", self.n, self.p)
        self.qd0 = _joint_rows(self, "qd0", self.n, self.p)

    def resolve_widths(self, in_widths):
        if in_widths.get("tau") not in (None, self.n):
            raise WidthError(f"input has width {in_widths['tau']}, the chain has {self.n} "
                             f"independent joints ({', '.join(self.arm.joint_names)})",
                             block=self.name, port="tau")
        return {"q": self.n, "qd": self.n, "energy": 1}

    def configure(self, in_widths, out_widths):
        self.n_xc = 2 * self.n

    def initial_state(self, xc, xd, p=None):
        xc[:, :self.n] = self.q0
        xc[:, self.n:] = self.qd0

    def output(self, t, xc, xd, u, y, p=None):
        q, qd = xc[:, :self.n], xc[:, self.n:]
        y[0][...] = q
        y[1][...] = qd
        y[2][:, 0] = self.arm.kinetic_energy(q, qd) + self.arm.potential_energy(q)

    def derivative(self, t, xc, xd, u, dxc, p=None):
        q, qd = xc[:, :self.n], xc[:, self.n:]
        dxc[:, :self.n] = qd
        dxc[:, self.n:] = self.arm.aba(q, qd, u[0])


@register
class CoupledGravity(Block):
    """The torques on the independent joints that hold the chain still at q: G^T g(G q + b)."""

    type_name = "CoupledGravity"
    summary = "gravity torques of a chain with mimic joints, in its independent joints (plain Python)"
    params = dict(CHAIN_PARAMS)
    inputs = ("q",)
    outputs = ("tau",)
    direct_feedthrough = True

    def setup(self):
        self.arm = coupled_arm(self, self.p)

    def resolve_widths(self, in_widths):
        if in_widths.get("q") not in (None, self.arm.n):
            raise WidthError(f"input has width {in_widths['q']}, the chain has {self.arm.n} "
                             "independent joints", block=self.name, port="q")
        return {"tau": self.arm.n}

    def output(self, t, xc, xd, u, y, p=None):
        y[0][...] = self.arm.gravity_torque(u[0])
