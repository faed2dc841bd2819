"""Reference values for the URDF tests, computed by Pinocchio (`pip install pin`); run from the
repository root to rewrite the .npz files beside this script:

    python tests/data/urdf/make_urdf_references.py

Each case is one chain (base_link -> tip_link) of a URDF in this folder or of
examples/robots/dual_arm.urdf (and arm6_mimic_chain, with mimic joints on the chain: see
`mimic_chain_case`). Pinocchio builds the whole
tree (a mimic joint as an independent joint); every joint off the chain is then locked
(`buildReducedModel`) at its rest position -- 0, a mimic joint at multiplier * 0 + offset -- so
the bodies it carries become fixed bodies of the link they hang from, and the chain's joints
above base_link are locked at 0. The armature is N^2 Jm of each chain joint's transmission
(mechanicalReduction N, drake:rotor_inertia Jm, read here with ElementTree). Stored, in the
base_link frame, at random configurations (rows): q, qd, qdd (rad, rad/s, rad/s^2), gravity (3,)
m/s^2, tau = RNEA with the armature (N m), M = mass matrix with the armature (kg m^2), tool =
the tip_link pose (4x4, m). The tests compare RobotModel to these without needing Pinocchio.
"""
from pathlib import Path
import re
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[2] / "examples" / "robots"
GRAVITY = np.array([0.3, -0.4, -9.81])          # in the world frame; tilted to reach every axis
CASES = {
    "arm6_mimic_gripper": (HERE / "arm6_mimic_gripper.urdf", "base_link", "tcp"),
    "dual_arm_left": (EXAMPLES / "dual_arm.urdf", "world", "left_tool0"),
    "dual_arm_right": (EXAMPLES / "dual_arm.urdf", "torso", "right_tool0"),
}


def chain_joints(root, base, tip):
    """Names of the joints from base to tip (top down), from the URDF's parent/child links."""
    parent_joint = {j.find("child").get("link"): j for j in root.findall("joint")}
    names, link = [], tip
    while link != base:
        j = parent_joint[link]
        names.append(j.get("name"))
        link = j.find("parent").get("link")
    return names[::-1]


def rest_positions(root):
    """{joint: rest position}: 0, a mimic joint its offset (its leader rests at 0)."""
    out = {}
    for j in root.findall("joint"):
        m = j.find("mimic")
        out[j.get("name")] = float(m.get("offset", 0)) if m is not None else 0.0
    return out


def reflected_inertia(root, names):
    out = np.zeros(len(names))
    for tr in root.iter("transmission"):
        jn = tr.find("joint").get("name")
        if jn in names:
            act = tr.find("actuator")
            N = float(act.find("mechanicalReduction").text)
            rotor = act.find("{http://drake.mit.edu}rotor_inertia")
            out[names.index(jn)] = N ** 2 * (float(rotor.get("value")) if rotor is not None else 0.0)
    return out


def case(file, base, tip, count=6, seed=0):
    path = file
    root = ET.parse(path).getroot()
    full = pin.buildModelFromUrdf(str(path))
    chain = [j for j in chain_joints(root, base, tip) if full.existJointName(j)]
    rest = rest_positions(root)
    q_ref = pin.neutral(full)
    locked = []
    for jid in range(1, full.njoints):
        name = full.names[jid]
        q_ref[full.joints[jid].idx_q] = rest[name]
        if name not in chain:
            locked.append(jid)
    model = pin.buildReducedModel(full, locked, q_ref)
    assert [model.names[i] for i in range(1, model.njoints)] == chain, "chain order"
    model.armature[:] = reflected_inertia(root, chain)
    data = model.createData()
    # the base_link frame in the world, at the rest configuration (fixed: nothing above it moves)
    q0 = pin.neutral(model)
    pin.framesForwardKinematics(model, data, q0)
    oMb = data.oMf[model.getFrameId(base)] if base != "world" else pin.SE3.Identity()
    R_b = oMb.rotation
    gravity = R_b.T @ GRAVITY
    model.gravity.linear = GRAVITY
    rng = np.random.default_rng(seed)
    n = model.nq
    out = {k: [] for k in ("q", "qd", "qdd", "tau", "M", "tool")}
    for _ in range(count):
        q, qd, qdd = (rng.uniform(-2, 2, n) for _ in range(3))
        tau = pin.rnea(model, data, q, qd, qdd)
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        pin.framesForwardKinematics(model, data, q)
        tool = (oMb.inverse() * data.oMf[model.getFrameId(tip)]).homogeneous
        for k, v in zip(out, (q, qd, qdd, tau, M, tool)):
            out[k].append(np.array(v, dtype=float))
    arrays = {k: np.stack(v) for k, v in out.items()}
    arrays["gravity"] = gravity
    arrays["joints"] = np.array(chain)
    return arrays


def mimic_chain_case(count=6, seed=0):
    """examples/robots/arm6_mimic_chain.urdf, base_link -> tcp, its two chain mimic joints as Pinocchio's mimic
    joints (`mimic=True`): q, qd, qdd of the independent joints (joint_1, 2, 4, 6), tau = RNEA,
    M = the mass matrix in them, tool (Pinocchio 4.1's ABA does not take mimic joints). No
    armature (a mimic joint has no velocity of its own to carry one). Pinocchio takes no mimic of a mimic, so
    joint_5's (0.5 q_3 + 0.3, q_3 = -0.8 q_2 + 0.2) is given to it as -0.4 q_2 + 0.4; the gripper's
    fingers, off the chain, are independent joints locked at their rest positions as above."""
    text = (EXAMPLES / "arm6_mimic_chain.urdf").read_text()
    for finger in ("finger_right_joint", "finger_right_tip_joint"):
        start = text.index(f'<joint name="{finger}"')
        end = text.index("</joint>", start)
        text = text[:start] + re.sub(r"<mimic[^>]*/>", "", text[start:end]) + text[end:]
    text = text.replace('<mimic joint="joint_3" multiplier="0.5" offset="0.3"/>',
                        '<mimic joint="joint_2" multiplier="-0.4" offset="0.4"/>')
    full = pin.buildModelFromXML(text, mimic=True)
    rest = {"finger_right_joint": 0.005, "finger_right_tip_joint": 0.3}
    locked = [full.getJointId(n) for n in ("finger_left_joint", *rest)]
    q_ref = pin.neutral(full)
    for name, value in rest.items():
        q_ref[full.joints[full.getJointId(name)].idx_q] = value
    model = pin.buildReducedModel(full, locked, q_ref)
    model.gravity.linear = GRAVITY
    data = model.createData()
    rng = np.random.default_rng(seed)
    out = {k: [] for k in ("q", "qd", "qdd", "tau", "M", "tool")}
    for _ in range(count):
        q, qd, qdd = (rng.uniform(-2, 2, model.nv) for _ in range(3))
        tau = pin.rnea(model, data, q, qd, qdd)
        # a fresh Data: Pinocchio 4.1's CRBA on a model with mimic joints reads values left in
        # its Data by the calls before (its M then differs from RNEA's columns by up to 0.3)
        M = pin.crba(model, model.createData(), q)
        M = np.triu(M) + np.triu(M, 1).T
        pin.framesForwardKinematics(model, data, q)
        tool = data.oMf[model.getFrameId("tcp")].homogeneous
        for k, v in zip(out, (q, qd, qdd, tau, M, tool)):
            out[k].append(np.array(v, dtype=float))
    arrays = {k: np.stack(v) for k, v in out.items()}
    arrays["gravity"] = GRAVITY
    arrays["joints"] = np.array(["joint_1", "joint_2", "joint_4", "joint_6"])
    return arrays


def main():
    for name, (file, base, tip) in CASES.items():
        arrays = case(file, base, tip)
        np.savez(HERE / f"{name}_reference.npz", **arrays)
        print(f"{name}: {len(arrays['joints'])} joints, {arrays['q'].shape[0]} configurations, "
              f"pinocchio {pin.__version__}")
    arrays = mimic_chain_case()
    np.savez(HERE / "arm6_mimic_chain_reference.npz", **arrays)
    print(f"arm6_mimic_chain: {len(arrays['joints'])} independent joints, {arrays['q'].shape[0]} "
          f"configurations, pinocchio {pin.__version__}")


if __name__ == "__main__":
    main()
