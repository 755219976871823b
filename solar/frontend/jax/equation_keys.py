"""Names of a jaxpr's equations, nested ones included, and how XLA's HLO carries them.

A key names one equation of the traced jaxpr (:attr:`Trace.graph
<solar.frontend.protocol.Trace.graph>`): ``"3"`` is equation 3 of the top-level jaxpr;
``"3/1"`` is equation 1 of the sub-jaxpr of equation 3 (a ``pjit``'s body, a ``scan``'s body);
where equation 3 holds several sub-jaxprs (a ``while``'s cond and body, a ``cond``'s branches)
the one meant is numbered: ``"3:1/0"`` is equation 0 of the second of them, in the order
:func:`sub_jaxprs` lists them. A scan or loop body lowered many times gives every iteration's
equation the same key. ``Trace.kernels_of`` is keyed this way.

XLA keeps no record of jaxpr equations, but every HLO instruction carries its equation's
*name stack* in its ``op_name`` metadata. :func:`tag` returns a copy of a jaxpr whose every
equation's name stack ends in a scope naming its place (``solar_3``, or ``solar_1_0`` in the
second sub-jaxpr of a parent with several); :func:`keys_of_op_name` reads the key back from
an ``op_name`` such as ``jit(f)/solar_3/jit(relu)/solar_0/max``. Names are metadata only: XLA
fuses the tagged program as it fuses the program itself.
"""

from __future__ import annotations

import re

# a scope, bare or inside the transforms the name stack wraps it in: ``vmap(solar_44)``
_TOKEN = re.compile(r"^(?:[\w\-]+\()*solar_(?:(\d+)_)?(\d+)\)*$")


def sub_jaxprs(params: dict) -> list[object]:
    """The jaxprs among an equation's parameters (``Jaxpr`` objects, a ``ClosedJaxpr``'s
    ``jaxpr``), in parameter order and tuple order (``jax.extend.core.jaxprs_in_params``)."""
    from jax.extend.core import ClosedJaxpr, Jaxpr

    out: list[object] = []
    for value in params.values():
        for v in value if isinstance(value, tuple) else (value,):
            if isinstance(v, Jaxpr):
                out.append(v)
            elif isinstance(v, ClosedJaxpr):
                out.append(v.jaxpr)
    return out


def child_prefix(key: str, params: dict, sub: object) -> str:
    """The key prefix of the equations of sub-jaxpr ``sub`` (a ``Jaxpr`` or ``ClosedJaxpr``)
    of the equation ``key`` with parameters ``params``: ``"3/"``, or ``"3:1/"`` when the
    equation holds several sub-jaxprs (``"3/"`` for one that is not among them)."""
    jaxpr = getattr(sub, "jaxpr", sub)
    subs = sub_jaxprs(params)
    if len(subs) > 1:
        for s, j in enumerate(subs):
            if j is jaxpr:
                return f"{key}:{s}/"
    return f"{key}/"


def parent(key: str) -> str | None:
    """The key of the equation whose sub-jaxpr holds ``key`` (``"3:1/0"`` -> ``"3"``), or
    None for a top-level equation."""
    if "/" not in key:
        return None
    return key.rsplit("/", 1)[0].split(":", 1)[0]


def tag(closed: object) -> object:
    """A copy of the ``ClosedJaxpr`` ``closed`` whose every equation (nested ones too) has
    its place appended to its name stack (see the module docstring)."""
    return closed.replace(jaxpr=_tag_jaxpr(closed.jaxpr, None))  # type: ignore[attr-defined]


def _tag_jaxpr(jaxpr: object, sub: int | None) -> object:
    eqns = []
    for j, e in enumerate(jaxpr.eqns):  # type: ignore[attr-defined]
        info = e.source_info
        scope = f"solar_{j}" if sub is None else f"solar_{sub}_{j}"
        info = info.replace(name_stack=info.name_stack.extend(scope))
        many = len(sub_jaxprs(e.params)) > 1
        counter = iter(range(1 << 30))
        params = {k: _tag_param(v, many, counter) for k, v in e.params.items()}
        eqns.append(e.replace(source_info=info, params=params))
    return jaxpr.replace(eqns=eqns)  # type: ignore[attr-defined]


def _tag_param(value: object, many: bool, counter) -> object:
    from jax.extend.core import ClosedJaxpr, Jaxpr

    if isinstance(value, tuple) and any(isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value):
        items = [_tag_param(v, many, counter) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, ClosedJaxpr):
        return value.replace(jaxpr=_tag_jaxpr(value.jaxpr, next(counter) if many else None))
    if isinstance(value, Jaxpr):
        return _tag_jaxpr(value, next(counter) if many else None)
    return value


def keys_of_op_name(op_name: str) -> tuple[str, ...]:
    """The keys of the equations an HLO instruction's ``op_name`` names through :func:`tag`'s
    scopes: ``jit(f)/solar_4/while/body/solar_0/sin`` -> ``("4/0",)`` (a scope inside a
    transform's name, ``vmap(solar_44)``, counts as itself); XLA joins the names of the
    instructions it merged with ``;``, one key each. Empty for an instruction no tagged
    equation made (a copy or layout change XLA added, a parameter)."""
    keys = (_key(name) for name in op_name.split(";"))
    return tuple(dict.fromkeys(k for k in keys if k))


def _key(op_name: str) -> str:
    key = ""
    for part in op_name.split("/"):
        m = _TOKEN.match(part)
        if m is None:
            continue
        sub, j = m.groups()
        if not key:
            key = j
        else:
            key += (f":{sub}" if sub is not None else "") + f"/{j}"
    return key


def equations(closed: object) -> dict[str, object]:
    """Every equation of the (closed) jaxpr ``closed``, nested ones included, by key."""
    out: dict[str, object] = {}

    def walk(jaxpr: object, prefix: str) -> None:
        for j, e in enumerate(jaxpr.eqns):  # type: ignore[attr-defined]
            key = f"{prefix}{j}"
            out[key] = e
            subs = sub_jaxprs(e.params)
            for s, sub in enumerate(subs):
                walk(sub, f"{key}:{s}/" if len(subs) > 1 else f"{key}/")

    walk(getattr(closed, "jaxpr", closed), "")
    return out
