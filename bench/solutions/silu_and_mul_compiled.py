"""``torch.compile`` of the reference of ``examples/definitions/silu_and_mul_i14336.json``."""

from pathlib import Path

import torch

from solar.definition.inputs import reference_module
from solar.definition.schema import load_definition

DEFINITION = Path(__file__).resolve().parents[2] / "examples/definitions/silu_and_mul_i14336.json"
run = torch.compile(reference_module(load_definition(DEFINITION)).run)
