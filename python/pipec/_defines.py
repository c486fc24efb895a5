"""Python values given as ``defines`` turned into Pipe source, which the checker types like the spec's
own consts (so ``BATCH=2.5`` for ``const BATCH = 512`` is a SpecError, as ``-D BATCH=2.5`` is)."""
from __future__ import annotations

import math
import numbers
from typing import Any, Dict, List, Mapping, Tuple


class Expr:
    """Pipe source given as it is: ``defines={"SIZE": pipec.Expr("2 * PATCH")}``."""

    def __init__(self, source: str):
        if not isinstance(source, str) or not source.strip():
            raise ValueError("pipec.Expr needs the Pipe source of an expression")
        self.source = source

    def __repr__(self) -> str:
        return f"pipec.Expr({self.source!r})"


def _string_literal(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def to_pipe(name: str, value: Any) -> str:
    """The Pipe source of `value`: bool, int, float, str, bytes, a list or tuple of those, numpy
    scalars and arrays, or an Expr."""
    if isinstance(value, Expr):
        return value.source
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        f = float(value)
        if not math.isfinite(f):
            raise ValueError(f"define {name}: {f} has no Pipe literal (only finite numbers)")
        text = repr(f)
        return text if ("." in text or "e" in text) else text + ".0"
    if isinstance(value, str):
        return _string_literal(value)
    if isinstance(value, bytes):
        return _string_literal(value.decode("utf-8"))
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):  # numpy arrays and scalars
        return to_pipe(name, value.tolist())
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_pipe(name, v) for v in value) + "]"
    raise TypeError(f"define {name}: cannot give a {type(value).__name__} to a Pipe const "
                    "(bool, int, float, str, a list of them, or pipec.Expr(\"source\"))")


def defines_to_pipe(defines: Mapping[str, Any]) -> List[Tuple[str, str]]:
    out = []
    for name, value in dict(defines).items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"define names are strings, not {name!r}")
        out.append((name, to_pipe(name, value)))
    return out
