"""GPU hardware specs: the catalogue ``solar/hw/catalog/*.yaml`` (package data; ``hw_specs/``
in a checkout links to it; :mod:`.catalogue`), the spec and its validation (:mod:`.spec`), and
what-if variants of a spec (:mod:`.whatif`, values with units read by :mod:`.quantity`).

Layer: the bottom, beside the IR; imports nothing of solar but :mod:`solar.fmt`.
"""

from solar.hw.catalogue import catalogue_dirs, list_specs, load_spec, resolve_name
from solar.hw.spec import UNIT_DESCRIPTIONS, UNITS, HardwareSpec, SpecError, UnknownUnitError

__all__ = [
    "UNITS",
    "UNIT_DESCRIPTIONS",
    "HardwareSpec",
    "SpecError",
    "UnknownUnitError",
    "catalogue_dirs",
    "list_specs",
    "load_spec",
    "resolve_name",
]
