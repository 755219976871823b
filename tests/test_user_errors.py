"""Errors that point at the user's code (issue 22): every bad input gives ONE line naming the
file and line, the ``nn.Module`` path and a way out; the full traceback is behind ``--debug``
(command line) or the exception's ``__cause__`` (Python). Extends the catalogue of
``test_bad_input.py`` (same problem-file helper) with a table of exact first lines.

=============================================  ==============================================
input                                          first line
=============================================  ==============================================
an exception raised in a nested forward        file:line, module path (layers.1), the error
a shape mismatch inside a library module       the user's line, the module path (proj)
a numpy array from get_inputs() / as input     the input, and torch.from_numpy
--set NAME that no file defines                --set NAME, the file, its constants
--device cuda without CUDA                     --device cuda, why, --device cpu
headroom with no GPU and --hw auto             names --hw
--timeout 0                                    --timeout
=============================================  ==============================================

Also: the API prints nothing on stderr (PyTorch's fake-tensor log is silenced), ``headroom``
keeps the profiler's log lines off stderr and writes its plot beside ``--out``, and operators
of a library's model are named at the library's line (:func:`source_frame`'s rule).
"""

from __future__ import annotations

import inspect
import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from console import run_solar
from test_bad_input import problem

import solar
from solar.api import InputError, ProgramError

HINT = "(raised by the program; --debug shows the traceback)"
API_HINT = "(raised by the program itself; its traceback is this error's __cause__)"
NO_CUDA = (
    "this PyTorch is built without CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
)

NESTED = """FILE:import torch
from torch import nn


class Block(nn.Module):
    def forward(self, x):
        raise RuntimeError("boom in forward")


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Identity(), Block()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def get_inputs():
    return [torch.randn(8, 8)]
"""

MISMATCH = """FILE:import torch

B = 2


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.proj(x)


def get_inputs():
    return [torch.randn(B, 5)]
"""

NUMPY = """FILE:import numpy as np
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [np.zeros((4, 8), dtype=np.float32)]
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("user_errors")
    out = {
        "nested": problem(d, "nested", NESTED),
        "mismatch": problem(d, "mismatch", MISMATCH),
        "numpy": problem(d, "numpy_input", NUMPY),
    }
    (d / "more").mkdir()
    problem(d / "more", "a", MISMATCH)
    problem(d / "more", "b", "return x * 2")
    out["folder"] = d / "more"
    return out


# (id, argv with {name} for a file of the fixture, exact first line of stderr)
CLI_ROWS = [
    (
        "raise-in-nested-forward",
        ["bound", "{nested}"],
        f"solar: error: nested.py:7 in layers.1 (Block): RuntimeError: boom in forward {HINT}",
    ),
    (
        "shape-mismatch",
        ["bound", "{mismatch}"],
        "solar: error: mismatch.py:12 in proj (Linear): RuntimeError: a and b must have same "
        f"reduction dim, but got [2, 5] X [8, 4]. {HINT}",
    ),
    (
        "numpy-input",
        ["bound", "{numpy}"],
        "solar: error: numpy_input.py: get_inputs() input 0 is a numpy array (4, 8) float32; "
        "solar traces PyTorch tensors or JAX arrays: pass torch.from_numpy(x) (or "
        "jnp.asarray(x))",
    ),
    (
        "validate-set-typo",
        ["validate", "{mismatch}", "--device", "cpu", "--set", "TYPO=2"],
        "solar: error: --set TYPO: mismatch.py defines no module-level TYPO (constants: B); "
        "check the name",
    ),
    (
        "headroom-set-typo",
        ["headroom", "{mismatch}", "--hw", "H100", "--device", "cpu", "--set", "TYPO=2"],
        "solar: error: --set TYPO: mismatch.py defines no module-level TYPO (constants: B); "
        "check the name",
    ),
    (
        "validate-set-typo-folder",
        ["validate", "{folder}", "--device", "cpu", "--set", "TYPO=2"],
        "solar: error: --set TYPO: none of the 2 files defines a module-level TYPO (constants: "
        "B); check the name",
    ),
    (
        "timeout-zero",
        ["bound", "{folder}", "--timeout", "0"],
        "solar: error: --timeout must be a positive number of seconds, got 0",
    ),
]
NO_GPU_ROWS = [
    (
        "validate-device-cuda",
        ["validate", "{mismatch}", "--device", "cuda"],
        f"solar: error: --device cuda: {NO_CUDA}; use --device cpu (small sizes: --set NAME=VALUE)",
    ),
    (
        "headroom-without-gpu",
        ["headroom", "{mismatch}"],
        "solar: error: --hw auto measures the visible CUDA GPU and there is none: pass --hw NAME "
        "(solar specs lists them) or --hw SPEC.yaml, the GPU whose bounds to compare with",
    ),
]


def _argv(argv, files) -> list[str]:
    return [a.format(**{k: str(v) for k, v in files.items()}) for a in argv]


@pytest.mark.parametrize("argv, line", [r[1:] for r in CLI_ROWS], ids=[r[0] for r in CLI_ROWS])
def test_command_line_first_lines(files, argv, line):
    code, out, err = run_solar(*_argv(argv, files))
    assert code == 2, (out, err)
    assert err.splitlines() == [line]


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a CUDA GPU")
@pytest.mark.parametrize(
    "argv, line", [r[1:] for r in NO_GPU_ROWS], ids=[r[0] for r in NO_GPU_ROWS]
)
def test_command_line_without_a_gpu(files, argv, line):
    code, out, err = run_solar(*_argv(argv, files))
    assert code == 2 and out == ""
    assert err.splitlines() == [line]


def test_debug_shows_the_whole_traceback(files):
    code, _, err = run_solar("--debug", "bound", files["nested"])
    assert code == 1
    assert 'raise RuntimeError("boom in forward")' in err  # the user's line, in the traceback
    assert "The above exception was the direct cause" in err
    assert err.strip().splitlines()[-1] == (
        "solar.frontend.program_errors.ProgramError: nested.py:7 in layers.1 (Block): "
        f"RuntimeError: boom in forward {API_HINT}"
    )


# ----------------------------------------------------------------------------------------------
# the Python API: the same table, exact str(error), the cause kept, nothing on stderr


class Block(torch.nn.Module):
    def forward(self, x):
        raise RuntimeError("boom in forward")


class Nested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Identity(), Block()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def _line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _linear_line() -> str:
    path = inspect.getsourcefile(torch.nn.Linear)
    return f"{Path(path).name}:{_line_of(torch.nn.Linear.forward, 'F.linear(')}"


API_ROWS = [
    (
        "raise-in-nested-forward",
        lambda: solar.bound(Nested(), [torch.randn(2, 8)]),
        ProgramError,
        lambda: (
            f"test_user_errors.py:{_line_of(Block.forward, 'raise')} in layers.1 (Block): "
            f"RuntimeError: boom in forward {API_HINT}"
        ),
    ),
    (
        "shape-mismatch-in-a-torch-module",
        lambda: solar.bound(torch.nn.Linear(8, 4), [torch.randn(2, 5)]),
        ProgramError,
        lambda: (
            f"{_linear_line()} in the model (Linear): RuntimeError: a and b must have same "
            f"reduction dim, but got [2, 5] X [8, 4]. {API_HINT}"
        ),
    ),
    (
        "numpy-input",
        lambda: solar.bound(torch.nn.Linear(8, 4), [np.zeros((2, 8), dtype=np.float32)]),
        InputError,
        lambda: (
            "input 0 is a numpy array (2, 8) float32; solar traces PyTorch tensors or JAX "
            "arrays: pass torch.from_numpy(x) (or jnp.asarray(x))"
        ),
    ),
]


@pytest.mark.parametrize(
    "call, kind, line", [r[1:] for r in API_ROWS], ids=[r[0] for r in API_ROWS]
)
def test_api_first_lines(capfd, call, kind, line):
    with pytest.raises(kind) as info:
        call()
    assert str(info.value).splitlines()[0] == line()
    if kind is ProgramError:
        assert isinstance(info.value.__cause__, RuntimeError)  # the original, with its trace
        assert info.value.original is info.value.__cause__
    assert capfd.readouterr().err == ""  # no fake-tensor log


# ----------------------------------------------------------------------------------------------
# headroom: no profiler lines on stderr, the plot written beside --out


def test_headroom_is_quiet_and_writes_its_plot(tmp_path):
    pytest.importorskip("matplotlib")
    f = problem(tmp_path, "tiny", "return torch.softmax(x * 2, dim=-1)")
    out = tmp_path / "tiny.json"
    code, stdout, err = run_solar(
        "headroom", f, "--hw", "H100", "--device", "cpu", "--budget-s", "0.02", "--out", out
    )
    assert code == 0 and err == "", err
    assert json.loads(out.read_text())["schema"] == "solar.headroom/1"
    assert (tmp_path / "tiny.png").read_bytes()[:4] == b"\x89PNG"


# ----------------------------------------------------------------------------------------------
# where an operator is named: the user's code, or the library that defines the running model


TORCHSEG = """
import torch
import torch.nn.functional as F


def _head(x):
    return F.relu(x)


class Segmenter(torch.nn.Module):
    def forward(self, x):
        return _head(x * 2)
"""
HELPER = "def double(x):\n    return x * 2\n"


def test_library_models_are_named_at_the_library_line(tmp_path, monkeypatch):
    """A package named ``torchseg`` under site-packages (``torch`` is a prefix of its name, as
    of torchvision's) defines the model: its operators are named at its own lines, not at the
    caller's. A helper library a user's forward calls is skipped for the user's line."""
    site = tmp_path / "site-packages"
    for name, text in (("torchseg", TORCHSEG), ("helperlib", HELPER)):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(site))
    for name in ("torchseg", "helperlib"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import helperlib
    import torchseg

    class Mine(torch.nn.Module):
        def forward(self, x):
            return helperlib.double(x) + 1

    x = torch.empty(1, 3, 8, 8)
    seg = solar.bound(torchseg.Segmenter(), [x]).to_dict()["kernels"]
    assert [k["source"] for k in seg] == ["__init__.py:12", "__init__.py:7"]
    assert {k["module"] for k in seg} == {"(Segmenter)"}
    line = _line_of(Mine.forward, "helperlib.double")
    mine = solar.bound(Mine(), [x]).to_dict()["kernels"]
    assert [k["source"] for k in mine] == [f"test_user_errors.py:{line}"] * len(mine)
