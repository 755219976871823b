"""The table of frontends (:data:`FRONTENDS`, PyTorch and JAX) and :func:`frontend_of`, which
tells a program's framework by the types of its model and inputs.

Every caller that must pick a framework (``solar.api``, the symbolic traces, the device-side
subjects) goes through this table. Each frontend imports its framework only inside
:meth:`~solar.frontend.protocol.Frontend.trace`, so ``import solar`` imports neither.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from solar.frontend.protocol import Frontend, Trace, leaves, type_names


class TorchFrontend(Frontend):
    """PyTorch: ``nn.Module`` s and functions of tensors, traced with make_fx on fake tensors
    (:mod:`solar.frontend.torch.entry`)."""

    name = "torch"
    label = "PyTorch"

    def owns(self, value: object) -> bool:
        return any(
            n.split(".")[0] == "torch" and n.endswith((".Tensor", ".Module"))
            for n in type_names(value)
        )

    def trace(
        self,
        model: object,
        inputs: object,
        *,
        kwargs: Mapping[str, object] | None = None,
        precision: str | None = None,
        name: str | None = None,
        symbolic: object = None,
        **sizes: object,
    ) -> Trace:
        from solar.frontend.torch.entry import trace

        return trace(
            model, inputs, kwargs=kwargs, precision=precision, name=name, symbolic=symbolic, **sizes
        )


class JaxFrontend(Frontend):
    """JAX: functions of arrays or ``jax.ShapeDtypeStruct`` s and Flax modules, traced with
    ``jax.make_jaxpr`` on abstract values (:mod:`solar.frontend.jax.trace`)."""

    name = "jax"
    label = "JAX"

    def owns(self, value: object) -> bool:
        for n in type_names(value):
            root = n.split(".")[0]
            if root in ("jax", "jaxlib") and n.endswith(("Array", "ArrayImpl", "ShapeDtypeStruct")):
                return True
            if root == "flax" and n.endswith(".Module"):
                return True
        return False

    def owns_program(self, fn: object, inputs: object) -> bool:
        """A Flax module, or JAX arrays among the inputs' pytree leaves (JAX must already be
        imported: a JAX program's caller has imported it)."""
        if "jax" not in sys.modules:
            return False
        from solar.frontend.jax.trace import is_jax_program

        return is_jax_program(fn, inputs)

    def trace(
        self,
        model: object,
        inputs: object,
        *,
        kwargs: Mapping[str, object] | None = None,
        precision: str | None = None,
        name: str | None = None,
        symbolic: object = None,
        **sizes: object,
    ) -> Trace:
        if sizes:
            raise TypeError(
                f"{', '.join(sizes)}: data-dependent sizes and routing apply to PyTorch programs"
            )
        if kwargs:
            raise TypeError(
                "kwargs are supported for PyTorch programs; bind them into the function"
            )
        from solar.frontend.jax.trace import trace_jax

        return trace_jax(model, inputs, precision=precision, name=name, symbolic=symbolic)  # type: ignore[arg-type]


#: every frontend, by name
FRONTENDS: dict[str, Frontend] = {f.name: f for f in (TorchFrontend(), JaxFrontend())}


def frontend(name: str) -> Frontend:
    """The frontend called ``name`` (a one-line error naming the others)."""
    try:
        return FRONTENDS[name]
    except KeyError:
        raise ValueError(f"framework must be one of {', '.join(FRONTENDS)}, got {name!r}") from None


def owner(value: object) -> Frontend | None:
    """The frontend whose value ``value`` is, by its type alone (None: no framework's)."""
    return next((f for f in FRONTENDS.values() if f.owns(value)), None)


def owners(model: object, inputs: object, kwargs: object = None) -> set[str]:
    """The names of the frontends the model and its inputs (and ``kwargs``) belong to."""
    values = [model, *leaves((inputs, kwargs or {}), owned=lambda x: owner(x) is not None)]
    found = {owner(x) for x in values}
    return {f.name for f in found if f is not None}


def frontend_of(
    model: object, inputs: object, kwargs: object = None, framework: str | None = None
) -> Frontend:
    """The program's frontend: ``framework`` when given, else what the types of the model and
    its inputs say (a torch.nn.Module or torch.Tensor inputs; a Flax module or JAX arrays /
    ``jax.ShapeDtypeStruct`` inputs). Raises a one-line error naming ``framework=`` when they
    say nothing (a function of no tensors, numpy inputs) or say both."""
    if framework is not None:
        return frontend(framework)
    found = owners(model, inputs, kwargs)
    if len(found) == 1:
        return FRONTENDS[found.pop()]
    labels = [f.label for f in FRONTENDS.values()]
    what = f"both {' and '.join(labels)} values" if found else f"no {' or '.join(labels)} value"
    raise TypeError(
        f"solar cannot tell which framework {type(model).__name__} belongs to ({what} among "
        f"the model and its inputs): pass {' or '.join(f'framework={n!r}' for n in FRONTENDS)}"
    )
