"""Frames and inertial parameters shared by the robot model and its readers (DH tables, URDF).

Conventions
- Poses are 4x4 homogeneous matrices (position in m); the kernels' 12-vector layout of a pose is
  R row-major (9) then p (3) (`pack_pose`).
- Rotations: rotx/roty/rotz turn by a (rad) about the fixed axis; URDF roll-pitch-yaw is
  R = Rz(yaw) Ry(pitch) Rx(roll).
- The ten standard inertial parameters of a body, about its frame's origin with its axes (Khalil):
  m (kg), m cx, m cy, m cz (kg m), Ixx, Ixy, Ixz, Iyy, Iyz, Izz (kg m^2; tensor entries, so
  Ixy = -sum m x y).

Kept apart from `robot` so that `robot` and `urdf` both import it and not each other.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..twins import python_twin
from . import rigid_body_kernels as rbk

__all__ = ["JointSpec", "axis_frame", "homogeneous", "inertial_from_params", "pack_pose",
           "params_from_inertial", "params_transform_matrix", "rotx", "roty", "rotz",
           "rpy_to_matrix", "sym3", "transform_params"]

def rotx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0, 0], [0, c, -s], [0, s, c]])


def roty(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1.0, 0], [-s, 0, c]])


def rotz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def rpy_to_matrix(rpy):
    """URDF roll-pitch-yaw (rad): R = Rz(yaw) Ry(pitch) Rx(roll), fixed axes x, y, z."""
    r, p, y = (float(v) for v in rpy)
    return rotz(y) @ roty(p) @ rotx(r)


def homogeneous(R=None, p=None):
    """4x4 pose from a rotation (3x3) and a position (3,) (m)."""
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T

def pack_pose(T):
    """4x4 pose -> the 12-vector layout of the kernels (R row-major, then p)."""
    return np.concatenate([T[:3, :3].reshape(9), T[:3, 3]])


def params_from_inertial(mass, com, inertia_com):
    """Ten standard parameters about the frame origin from mass (kg), com (m), inertia about the com."""
    m = float(mass)
    c = np.asarray(com, dtype=float).reshape(3)
    Ic = np.asarray(inertia_com, dtype=float).reshape(3, 3)
    IO = Ic + m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
    return np.array([m, m * c[0], m * c[1], m * c[2],
                     IO[0, 0], IO[0, 1], IO[0, 2], IO[1, 1], IO[1, 2], IO[2, 2]])


def inertial_from_params(theta):
    """Inverse of `params_from_inertial`: (mass, com, inertia about the com); com = 0 when m = 0."""
    m = float(theta[0])
    h = np.asarray(theta[1:4], dtype=float)
    IO = sym3(theta[4:10])
    c = h / m if m > 0 else np.zeros(3)
    Ic = IO - m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
    return m, c, Ic


def sym3(v):
    xx, xy, xz, yy, yz, zz = (float(x) for x in v)
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def transform_params(theta, T):
    """Standard parameters given in a frame F expressed in a frame P, where T (4x4) is F's pose in P."""
    out = np.zeros(10)
    python_twin(rbk._inertia_to_parent)(pack_pose(T), np.asarray(theta, dtype=float), out)
    return out


def params_transform_matrix(T):
    """10x10 matrix A with transform_params(theta, T) = A @ theta (the map is linear)."""
    return np.stack([transform_params(e, T) for e in np.eye(10)], axis=1)


def axis_frame(axis):
    """A rotation whose z column is the unit vector `axis` (Rodrigues from e_z)."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    z = np.array([0.0, 0.0, 1.0])
    v = np.cross(z, a)
    s = np.linalg.norm(v)
    c = float(np.dot(z, a))
    if s < 1e-12:
        return np.eye(3) if c > 0 else rotx(math.pi)
    K = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + K + K @ K * ((1 - c) / (s * s))




@dataclass(frozen=True)
class JointSpec:
    """One joint and the link it moves, in the frames of the user's description.

    `placement` is the 4x4 pose of the joint frame at q = 0 in the previous link frame (the base
    frame for the first joint), with the joint axis along its z; `offset` is the link frame's pose
    in that moved joint frame. `theta` holds the link's ten standard parameters in the link frame.
    """

    name: str
    jtype: int                       # 0 revolute, 1 prismatic
    placement: np.ndarray            # (4, 4)
    offset: np.ndarray               # (4, 4)
    theta: np.ndarray                # (10,)
    lower: float = -math.inf
    upper: float = math.inf
    viscous: float = 0.0             # N m s/rad (N s/m)
    coulomb_pos: float = 0.0         # N m, friction while qd > 0
    coulomb_neg: float = 0.0         # N m, friction while qd < 0 (signed, usually <= 0)
    Jm: float = 0.0                  # rotor inertia, kg m^2 (motor side)
    gear: float = 1.0                # gear ratio N (reflected inertia N^2 Jm)
