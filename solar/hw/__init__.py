"""GPU hardware specs: the catalogue in ``hw_specs/*.yaml`` and its validating loader.

Layer: the bottom, beside the IR; imports nothing of solar but :mod:`solar.fmt`.
"""

from solar.hw.spec import (
    UNIT_DESCRIPTIONS,
    UNITS,
    HardwareSpec,
    SpecError,
    UnknownUnitError,
    catalogue_dirs,
    list_specs,
    load_spec,
    resolve_name,
)

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
