"""Saving the tuning page's values as a variant ("Save as variant" on `serve`'s page), only when
the user asks, and never into the user's diagram file.

The variant goes into a diagram file of its own beside the diagram, `NAME.tuned.yaml` for
`NAME.yaml`: the first save copies the diagram's text as it is (every comment, blank line and
layout kept; relative paths inside it still resolve, the folder being the same) and adds the
variant under its `variants:` (a `variants:` section is added at the end when there is none);
later saves edit that file's text the same way, replacing a variant of the same name. Each save
is checked before it is written: the new file, loaded with the variant, must resolve to exactly
the diagram the page ran (its variant, its --set overrides and the tuned values), and every
variant it had before must be unchanged; then it is written atomically
(engine.result.atomic_write). So `python cli.py simulate NAME.tuned.yaml --variant V` runs what
the page showed.

(Why a copy and not a file the diagram includes: the diagram format has no include for
variants, and the diagram file is the user's: blocksim never rewrites it.)
"""
from __future__ import annotations

import re
import shlex
import tempfile
import time
from pathlib import Path

import yaml

from ..engine.result import atomic_write
from ..errors import BlocksimError

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


def variant_path(diagram_path) -> Path:
    """The file the variants of `diagram_path` are saved into: NAME.tuned.yaml beside it."""
    path = Path(diagram_path)
    return path.with_name(f"{path.stem}.tuned{path.suffix or '.yaml'}")


def _flow(key: str, value) -> str:
    """`key: value` as one line of YAML flow style (floats by repr: they read back exactly)."""
    return yaml.safe_dump({key: value}, default_flow_style=True, width=1 << 30,
                          sort_keys=False).strip()[1:-1]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith("#")


def with_variant(text: str, name: str, table: dict, note: str, where: str) -> str:
    """`text` (a diagram's YAML) with variant `name` = `table` ({dotted key: value}) in its
    top-level `variants:` section, every other line as it was: added after the section's last
    entry, or in place of an entry of the same name, or in a new section at the end."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    head = next((i for i, line in enumerate(lines) if re.match(r"^variants\s*:", line)), None)
    if head is not None:
        rest = lines[head].split(":", 1)[1].strip()
        if rest == "{}":
            lines[head] = "variants:\n"
        elif rest and not rest.startswith("#"):
            raise BlocksimError(f"{where}: its variants: is written in flow style on one line "
                                "(variants: {...}); a variant is added to a block-style section "
                                "only (one variant per line under variants:)")
    if head is None:
        lines += ([] if not lines or not lines[-1].strip() else ["\n"]) + ["variants:\n"]
        head = len(lines) - 1
    end = head + 1                      # the section: lines after the head up to a top-level key
    while end < len(lines) and (not _content(lines[end]) or _indent(lines[end]) > 0):
        end += 1
    children = [i for i in range(head + 1, end) if _content(lines[i])]
    step = _indent(lines[children[0]]) if children else 2
    entry = [f"{' ' * step}{name}:{'  # ' + note if note else ''}\n"]
    entry += [f"{' ' * (2 * step)}{_flow(k, v)}\n" for k, v in table.items()]
    own = [i for i in children if _indent(lines[i]) == step
           and re.match(rf"^\s*['\"]?{re.escape(name)}['\"]?\s*:", lines[i])]
    if own:
        start = own[0]
        stop = start + 1
        while stop < end and (not _content(lines[stop]) or _indent(lines[stop]) > step):
            stop += 1
        while stop > start + 1 and not _content(lines[stop - 1]):
            stop -= 1                   # keep the blank or comment lines after the entry
        lines[start:stop] = entry
    else:
        last = children[-1] + 1 if children else head + 1
        lines[last:last] = entry
    return "".join(lines)


def save_variant(diagram_path, name: str, variant: str | None, sets: dict,
                 tuned: dict) -> tuple[Path, str]:
    """Save variant `name` of the diagram at `diagram_path`: the variant `variant` it was loaded
    with, its `sets` overrides and the `tuned` values ({block.param: value}), in that order of
    precedence (the tuned values last, as the page ran them). Returns (the file written, the
    command that runs it)."""
    import blocksim
    source = Path(diagram_path)
    if not NAME.match(name or ""):
        raise BlocksimError(f"variant name {name!r}: letters, digits, _ and - only, starting "
                            "with a letter or _")
    original = blocksim.load(source)
    if name in original.variants:
        raise BlocksimError(f"variant name {name!r}: {source} has a variant of that name "
                            "already; choose another name (its own stays as it is)")
    target = variant_path(source)
    base = (original.spec.variants.get(variant) or {}) if variant else {}
    table = {**base, **sets, **tuned}
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    note = (f"saved by `serve` {stamp}" + (f" from variant {variant}" if variant else "")
            + ": " + ", ".join(tuned))
    text = target.read_text(encoding="utf-8") if target.is_file() else \
        source.read_text(encoding="utf-8")
    before = blocksim.load(target).spec.variants if target.is_file() else original.spec.variants
    new_text = with_variant(text, name, table, note, str(target))
    ran = blocksim.load(source, variant=variant, set=sets or None).resolved_yaml(values=tuned)
    with tempfile.NamedTemporaryFile("w", dir=source.parent, prefix=f".{target.stem}.",
                                     suffix=".yaml", encoding="utf-8") as fh:
        fh.write(new_text)
        fh.flush()
        try:
            saved = blocksim.load(fh.name)
            again = blocksim.load(fh.name, variant=name).resolved_yaml()
        except BlocksimError as err:
            raise BlocksimError(f"{target}: with the variant {name!r} added it does not load "
                                f"(nothing was written): {err}") from None
    kept = {k: v for k, v in saved.spec.variants.items() if k != name}
    if _body(again) != _body(ran) or kept != {k: v for k, v in before.items() if k != name}:
        raise BlocksimError(f"{target}: the variant {name!r} did not read back as the page's run "
                            "(nothing was written); the file's variants: section may be laid "
                            "out in a way this save does not edit")
    atomic_write(target, lambda out: out.write(new_text), text=True)
    return target, f"python cli.py simulate {shlex.quote(str(target))} --variant {name}"


def _body(resolved: str) -> str:
    """A resolved diagram without its header comment (which names the file and variant)."""
    return "".join(line for line in resolved.splitlines(keepends=True)
                   if not line.startswith("# resolved from"))
