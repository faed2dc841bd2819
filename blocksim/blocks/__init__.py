"""The block library: importing this package registers every block type in REGISTRY."""
from . import continuous, discrete, math, routing, sinks, sources  # noqa: F401  (registration side effects)
from . import actuators, foc, friction, sensors  # noqa: F401  (actuators, FOC, friction, sensors)
from . import trajectories  # noqa: F401  (joint-space trajectory generators)
from . import control  # noqa: F401  (PID)
from . import robot  # noqa: F401  (Manipulator, InverseDynamics and the model-based robot blocks)
from . import kinematics  # noqa: F401  (robot kinematics: the Singularity block)
from . import interaction  # noqa: F401  (collision detection: momentum observer, residuals, detector)
from . import elastic  # noqa: F401  (ElasticManipulator: elastic joints and backlash)
from . import contact  # noqa: F401  (interaction: contact wall, impedance, admittance)
from . import closed_chain  # noqa: F401  (closed-chain plants: the five-bar linkage)
from .base import REGISTRY, Block, Kernels, Param, SampleTime, register

__all__ = ["REGISTRY", "Block", "Kernels", "Param", "SampleTime", "register"]
