"""Exceptions the user's program raises while solar traces it (a shape mismatch, a ``raise``
in ``forward``, a JAX type error), located: :class:`ProgramError` names the ``file.py:LINE``
of the model's own code that raised and the ``nn.Module`` path running there, in one line,
and keeps the original exception, with its traceback, as its ``__cause__``. Which frame is
"the model's own code" is :func:`solar.frontend.torch.provenance.source_frame`'s rule, the
same one that names every kernel's source line.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_SOLAR_DIR = str(Path(__file__).resolve().parents[1]) + os.sep


class ProgramError(RuntimeError):
    """An exception the user's program raised while solar traced it (a shape mismatch, a
    ``raise`` in ``forward``), located: :attr:`where` is the ``file.py:LINE`` of the model's
    own code that raised (see :func:`solar.frontend.torch.provenance.source_frame`),
    :attr:`module` the ``nn.Module`` path running there (``layers.3.mlp (MLP)``). The
    original exception, with its whole traceback, is this one's ``__cause__``."""

    def __init__(self, original: BaseException, where: str, module: str) -> None:
        self.original, self.where, self.module = original, where, module
        text = str(original).strip()
        first = text.splitlines()[0] if text else ""
        what = f"{type(original).__name__}: {first}" if first else type(original).__name__
        place = " in ".join(x for x in (where, module) if x)
        #: the one line: where, then the original error
        self.summary = f"{place}: {what}" if place else what
        super().__init__(
            f"{self.summary} (raised by the program itself; its traceback is this error's "
            "__cause__)"
        )


def located(e: BaseException, model) -> ProgramError | None:
    """``e`` as a :class:`ProgramError` when the user's program raised it: its traceback runs
    through the model's own code or a module's ``forward``, and neither is ``e`` one of
    solar's errors nor was it raised in solar's code (those already name the operator and
    line). None otherwise."""
    if type(e).__module__.split(".")[0] == "solar" or "torch" not in sys.modules:
        return None
    import torch

    from solar.frontend.torch.provenance import frame_label, module_packages, source_frame

    tb, innermost, inside = e.__traceback__, None, set()
    while tb is not None:  # the frames from the trace call in (not the caller's own lines)
        innermost, tb = tb.tb_frame, tb.tb_next
        inside.add(id(innermost))
    modules: list = []
    frame = innermost
    while frame is not None:  # the modules whose forward was running, innermost first
        me = frame.f_locals.get("self") if frame.f_code.co_name == "forward" else None
        if isinstance(me, torch.nn.Module) and (not modules or modules[-1] is not me):
            modules.append(me)
        frame = frame.f_back
    if innermost is not None and innermost.f_code.co_filename.startswith(_SOLAR_DIR):
        return None  # raised by solar itself (its message says what and where)
    source = source_frame(innermost, module_packages(modules))
    if source is not None and id(source) not in inside:
        source = None
    if source is None and not modules:
        return None
    if source is None:  # a library module (nn.Linear): the line of its forward that raised
        source = next(f for f in _frames_out(innermost) if f.f_locals.get("self") is modules[0])
    return ProgramError(e, frame_label(source), _module_name(modules[0], model) if modules else "")


def _frames_out(frame):
    while frame is not None:
        yield frame
        frame = frame.f_back


def _module_name(module, model) -> str:
    """``layers.3.mlp (MLP)``: the module's path in ``model`` and its class."""
    import torch

    kind = type(module).__name__
    if isinstance(model, torch.nn.Module):
        for path, m in model.named_modules(remove_duplicate=False):
            if m is module:
                return f"{path} ({kind})" if path else f"the model ({kind})"
    return f"({kind})"
