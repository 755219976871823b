"""The one bridge from results (data) to their views.

Result types (:class:`~solar.backend.result.Bound`, comparisons, provisions, sweeps, headroom
and validation reports, ...) are plain dataclasses in the layer that makes them. They inherit
:class:`Viewable`, whose methods import the views package :mod:`solar.report` lazily, here and
nowhere else: a result never imports a view, and the views import the results they draw.
"""

from __future__ import annotations


def _views():
    import solar.report  # views sit above every result layer: imported on first use only

    return solar.report


class Viewable:
    """Text (``str``), HTML (``_repr_html_``), DataFrame and plot of a result, each looked up
    in the views' registry (:mod:`solar.report`) by the result's type."""

    def __str__(self) -> str:
        return _views().to_text(self)

    def _repr_html_(self) -> str:
        return _views().to_html(self)

    def to_dataframe(self, *args, **kwargs):
        """pandas DataFrame of this result (see :mod:`solar.report.frame` for the options)."""
        return _views().to_frame(self, *args, **kwargs)

    def plot(self, *args, **kwargs):
        """matplotlib figure of this result (see :mod:`solar.report.plots` for the kinds): shown
        inline by Jupyter/VS Code as a cell's value, written by ``fig.savefig(path)``."""
        return _views().to_plot(self, *args, **kwargs)
