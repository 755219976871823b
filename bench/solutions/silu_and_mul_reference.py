"""The reference of ``examples/definitions/silu_and_mul_i14336.json`` as a solution: its SOL
score is 0.5 up to timing noise (T_k = T_b)."""

from pathlib import Path

from solar.definition.inputs import reference_module
from solar.definition.schema import load_definition

DEFINITION = Path(__file__).resolve().parents[2] / "examples/definitions/silu_and_mul_i14336.json"
run = reference_module(load_definition(DEFINITION)).run
