"""Views of solar's results: text tables (:mod:`.table`, :mod:`.measured`), HTML
(:mod:`.html`), pandas DataFrames (:mod:`.frame`) and matplotlib plots (:mod:`.plots`); a
symbolic bound's formulas, crossovers and curve (:mod:`.symbolic_views`).

Layer: the top, beside the CLI. Views import the results they draw (``solar.backend.result``,
``solar.questions``, ``solar.gpu``) and any layer below; nothing below imports this package
except :class:`solar.viewable.Viewable`, which reaches it lazily when a result is printed,
shown in a notebook, turned into a DataFrame or plotted.

:data:`VIEWS` is the registry: for each result type (by class name, looked up along the
result's MRO), the function of each view kind as ``"module:function"`` in this package, imported
on first use, so printing a bound never imports the device-side modules or matplotlib.
"""

from __future__ import annotations

import html as _html
from importlib import import_module

#: result class name -> view kind -> "module:function" of this package
VIEWS: dict[str, dict[str, str]] = {
    "Bound": {
        "text": "table:bound_text",
        "html": "html:bound_html",
        "frame": "frame:bound_frame",
        "plot": "plots:plot_bound",
    },
    "SymbolicBound": {
        "text": "symbolic_views:symbolic_text",
        "html": "symbolic_views:symbolic_html",
        "plot": "symbolic_views:plot_symbolic",
    },
    "ParallelBound": {"text": "parallel:parallel_text"},
    "Comparison": {
        "text": "table:comparison_text",
        "html": "html:comparison_html",
        "frame": "frame:comparison_frame",
        "plot": "plots:compare_plot",
    },
    "Provision": {
        "text": "table:provision_text",
        "html": "html:provision_html",
        "frame": "frame:provision_frame",
        "plot": "plots:region_plot",
    },
    "Sweep": {
        "text": "table:sweep_text",
        "html": "html:sweep_html",
        "frame": "frame:sweep_frame",
        "plot": "plots:sweep_plot",
    },
    "Serving": {"text": "serving:serving_text", "plot": "serving:serving_plot"},
    "ValidationReport": {"text": "measured:validation_text"},
    "HeadroomReport": {"text": "measured:headroom_text", "plot": "plots:headroom_report_plot"},
    "BatchReport": {"text": "measured:headroom_batch_text", "plot": "plots:headroom_batch_plot"},
    "Calibration": {"text": "measured:calibration_text"},
    "CompiledBound": {"text": "compiled:compiled_bound_text"},
    "CompiledHeadroom": {
        "text": "compiled:compiled_headroom_text",
        "plot": "compiled:plot_compiled_headroom",
    },
}


def view(result, kind: str):
    """The view function of ``kind`` (``text``, ``html``, ``frame``, ``plot``) for ``result``."""
    for cls in type(result).__mro__:
        target = VIEWS.get(cls.__name__, {}).get(kind)
        if target:
            module, fn = target.split(":")
            return getattr(import_module(f"{__name__}.{module}"), fn)
    raise TypeError(f"{type(result).__name__} has no {kind} view (solar.report.VIEWS)")


def to_text(result) -> str:
    """What ``str(result)`` and the CLI print."""
    return view(result, "text")(result)


def to_html(result) -> str:
    """Notebook HTML; results without an HTML view show their text, preformatted."""
    try:
        fn = view(result, "html")
    except TypeError:
        return "<pre>" + _html.escape(to_text(result)) + "</pre>"
    return fn(result)


def to_frame(result, *args, **kwargs):
    """A pandas DataFrame of ``result``."""
    return view(result, "frame")(result, *args, **kwargs)


def to_plot(result, *args, **kwargs):
    """A matplotlib figure of ``result``."""
    return view(result, "plot")(result, *args, **kwargs)


__all__ = ["VIEWS", "to_frame", "to_html", "to_plot", "to_text", "view"]
