"""Text and Markdown descriptions of the block library, generated from the registry, and the units
of block ports (used by `blocksim blocks`, docs/blocks.md and the plots' axis labels).

Port units and unit preservation are declared on the block classes (`Block.port_units`, the name
convention `base.PORT_UNITS`, `Block.preserves_units`); this module only looks them up and renders
them. Generic ports (`in`, `out`, `in1`...) have no units of their own: plots infer them along the
wires.
"""
from __future__ import annotations

import inspect

from ..errors import UnknownBlockTypeError, did_you_mean
from . import REGISTRY
from .base import PORT_UNITS, REQUIRED

FAMILIES = (
    ("sources", "Sources"), ("trajectories", "Trajectories"), ("math", "Math"),
    ("routing", "Routing"), ("continuous", "Continuous"), ("discrete", "Discrete"),
    ("control", "Control"), ("robot", "Robot"), ("kinematics", "Robot kinematics"),
    ("elastic", "Elastic joints"), ("closed_chain", "Closed chains"), ("actuators", "Actuators"),
    ("interaction", "Interaction"),
    ("friction", "Joint friction"), ("foc", "Field-oriented control"), ("sensors", "Sensors"),
    ("sinks", "Sinks"), ("plugins", "Plugins (blocks of your own)"),
)


def port_units(type_name: str, port: str) -> str | None:
    """Units of a port of a block type (input or output), or None when the port has none of its own
    (an unknown type: the name convention)."""
    cls = REGISTRY.get(type_name)
    return PORT_UNITS.get(port) if cls is None else cls.units_of(port)


def preserves_units(type_name: str) -> bool:
    """True when the block type's outputs have the units of its inputs (Block.preserves_units)."""
    cls = REGISTRY.get(type_name)
    return cls is not None and cls.preserves_units


def _with_units(type_name: str, ports) -> str:
    parts = []
    for p in ports:
        u = port_units(type_name, p)
        parts.append(f"{p} ({u})" if u else p)
    return ", ".join(parts)


def _ports(cls) -> tuple[str, str]:
    ins = _with_units(cls.type_name, cls.inputs) or "none"
    if cls.optional_inputs:
        ins += f" (optional: {', '.join(cls.optional_inputs)})"
    return ins, _with_units(cls.type_name, cls.outputs) or "none"


def _default(p) -> str:
    return "required" if p.default is REQUIRED else repr(p.default)


def describe(type_name: str | None = None) -> str:
    """The whole library (one line a block) or one block in full."""
    if type_name is None:
        width = max(len(n) for n in REGISTRY)
        lines = [f"{name:<{width}}  {cls.summary}" for name, cls in sorted(REGISTRY.items())]
        lines.append("\n`blocksim blocks TYPE` shows one block's ports and parameters.")
        return "\n".join(lines)
    cls = REGISTRY.get(type_name)
    if cls is None:
        raise UnknownBlockTypeError(f"unknown block type '{type_name}'{did_you_mean(type_name, REGISTRY)}")
    ins, outs = _ports(cls)
    lines = [f"{cls.type_name}: {cls.summary}", ""]
    doc = (cls.__doc__ or "").strip()
    if doc:
        lines += [doc, ""]
    lines += [f"inputs:  {ins}", f"outputs: {outs}", f"sample time: {cls.sample}", "", "parameters:"]
    for name, p in cls.all_params().items():
        choices = f" one of {', '.join(p.choices)}" if p.choices else ""
        lines.append(f"  {name:<18} [{p.units}] default {_default(p)}{choices}: {p.doc}")
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _doc_markdown(doc: str) -> list[str]:
    """A docstring as Markdown: each paragraph joined into one line; a paragraph whose lines are
    all indented (a formula block) kept as a code block."""
    text = inspect.cleandoc(doc)
    out: list[str] = []
    for para in text.split("\n\n"):
        lines = [line for line in para.splitlines() if line.strip()]
        if not lines:
            continue
        if all(line.startswith("    ") for line in lines):
            out += ["```", *[line[4:] for line in lines], "```", ""]
        else:
            out += [" ".join(line.strip() for line in lines), ""]
    while out and not out[-1]:
        out.pop()
    return out


def _library_blocks(plugins: bool = False) -> dict[str, list]:
    """The shipped blocks by family, in FAMILIES order; with `plugins`, the blocks registered
    from elsewhere too (family "plugins")."""
    families: dict[str, list] = {key: [] for key, _ in FAMILIES}
    for name, cls in sorted(REGISTRY.items()):
        module = cls.__module__
        if not module.startswith("blocksim.blocks."):
            if plugins:
                families["plugins"].append(cls)
            continue
        family = getattr(cls, "family", None) or module.rsplit(".", 1)[-1]
        families.setdefault(family, []).append(cls)
    return {k: v for k, v in families.items() if v}


def markdown(plugins: bool = False) -> str:
    """docs/blocks.md: every shipped block by family, with its ports (units) and parameters
    (units, defaults); with `plugins`, the blocks of loaded plugins too. Deterministic: the same
    library gives the same text."""
    titles = dict(FAMILIES)
    families = _library_blocks(plugins)
    out = ["# Block library", "",
           "Generated from the block registry by `python cli.py blocks --markdown --out "
           "docs/blocks.md`; do not edit by hand (`tests/test_figures_cli.py` fails when this file "
           "is out of date). `python cli.py blocks TYPE` shows the same for one block.", "",
           "Every block also takes `enabled` (default true): a disabled block outputs zeros and its "
           "states hold. Units are SI; `-` is dimensionless. Port names shown are those of the "
           "default configuration (blocks such as Sum and Mux name their inputs `in1..inN` from "
           "their parameters).", ""]
    for family, classes in families.items():
        links = ", ".join(f"[{c.type_name}](#{c.type_name.lower()})" for c in classes)
        out.append(f"- {titles.get(family, family.title())}: {links}")
    out.append("")
    for family, classes in families.items():
        out += [f"## {titles.get(family, family.title())}", ""]
        for cls in classes:
            ins, outs = _ports(cls)
            out += [f"### {cls.type_name}", "", f"*{cls.summary}*", ""]
            doc = (cls.__doc__ or "").strip()
            if doc:
                out += _doc_markdown(doc) + [""]
            out += [f"- inputs: {ins}", f"- outputs: {outs}", f"- sample time: {cls.sample}", "",
                    "| parameter | units | default | description |", "| --- | --- | --- | --- |"]
            for pname, p in cls.all_params().items():
                desc = p.doc + (f" (one of {', '.join(p.choices)})" if p.choices else "")
                out.append(f"| `{pname}` | {_cell(p.units)} | {_cell(_default(p))} | {_cell(desc)} |")
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
