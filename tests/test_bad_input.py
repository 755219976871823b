"""The bad-input catalogue: every way a user can hand solar something it cannot analyse gives a
one-line error (naming what and where), a non-zero exit code on the command line, and leaves no
half-written file behind (the CLI writes a temporary file in the target folder and renames it).

=================================================  =============================================
input                                              error
=================================================  =============================================
an operator with no loop-nest definition           the operator, the user's line, the way out
data-dependent control flow (``if x.sum() > 0``)   data-dependent, at the user's line
data-dependent Python values (item)               data-dependent operator, observe=True
symbolic sizes without an example value            SymbolicShapeError (hinted sizes specialise)
a spec with a missing or negative field            names the field
a problem file without Model or get_inputs         says what is missing
CUDA tensors on a CPU-only build, mixed devices    the device problem
a NaN-producing model in validation                failed: "no finite element"
an output path that cannot be written              fails before analysing, nothing written
a dtype the IR lacks, syntax errors, raising code   one line each
=================================================  =============================================
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import solar
from solar.cli import main

ROOT = Path(__file__).resolve().parents[1]
H100_YAML = ROOT / "hw_specs" / "h100_sxm.yaml"


def problem(tmp_path: Path, name: str, body: str, inputs: str = "[torch.randn(8, 8)]") -> Path:
    """A problem file ``name.py``: ``body`` is the Model's forward (or the whole file when it
    starts with ``FILE:``)."""
    if body.startswith("FILE:"):
        text = body.removeprefix("FILE:")
    else:
        text = (
            "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n"
            f"    def forward(self, x):\n{textwrap.indent(textwrap.dedent(body), ' ' * 8)}\n\n\n"
            f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return []\n"
        )
    f = tmp_path / f"{name}.py"
    f.write_text(text)
    return f


def one_line_error(capfd, *argv, code: int = 2) -> str:
    """Run the CLI in-process; assert the exit code and exactly one line on stderr (file
    descriptor 2, so library logging is caught too); return that line."""
    got = main([str(a) for a in argv])
    out, err = capfd.readouterr()
    lines = err.strip().splitlines()
    assert got == code, (got, out, err)
    assert len(lines) == 1, err
    assert lines[0].startswith("solar: error: ")
    return lines[0]


# ----------------------------------------------------------------------------------------------
# operators and control flow


def test_unsupported_operator(capfd, tmp_path):
    f = problem(tmp_path, "airy", "return torch.special.airy_ai(x)")
    err = one_line_error(capfd, "bound", f)
    assert "aten.special_airy_ai" in err and "airy.py:7" in err and "register" in err


def test_data_dependent_control_flow(capfd, tmp_path):
    f = problem(tmp_path, "branch", "if x.sum() > 0:\n    return x * 2\nreturn x")
    err = one_line_error(capfd, "bound", f)
    assert "data-dependent" in err and "branch.py:7" in err


def test_data_dependent_scalars(capfd, tmp_path):
    """A Python value read from a tensor (``.item()``) has no value on fake tensors: refused
    in one line that names the way out (``nonzero`` and other data-dependent sizes are
    bounded at their minimum: tests/test_data_dependent.py)."""
    body = "return torch.zeros(int(x.sum().item()))"
    err = one_line_error(capfd, "bound", problem(tmp_path, "item", body))
    assert "data-dependent" in err and "observe=True" in err


def test_symbolic_sizes_without_example_values():
    """make_fx on fake tensors traces concrete shapes: a size with a hint is specialised to it,
    one without (an unbacked symbol) cannot be and is rejected in one line."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    env = ShapeEnv()
    with FakeTensorMode(shape_env=env):
        unhinted = torch.empty(env.create_unbacked_symint(), 4)
    with pytest.raises(solar.api.SymbolicShapeError, match="symbolic size u0 with no example"):
        solar.bound(lambda x: x * 2, [unhinted])

    from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext

    dyn = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC, DimDynamic.STATIC])
    hinted = FakeTensorMode(shape_env=ShapeEnv()).from_tensor(
        torch.randn(8, 4), symbolic_context=dyn
    )
    assert not isinstance(hinted.shape[0], int)
    concrete = solar.bound(lambda x: x * 2, [torch.empty(8, 4, device="meta")])
    assert solar.bound(lambda x: x * 2, [hinted]).fused == concrete.fused


# ----------------------------------------------------------------------------------------------
# specs


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda t: "\n".join(x for x in t.splitlines() if "dram_bandwidth_gbs" not in x), "dram"),
        (lambda t: t.replace("sm_count: 132", "sm_count: -132"), "sm_count"),
        (lambda t: t.replace("tc_bf16: 4096", "tc_bf16: -4096"), "tc_bf16"),
    ],
    ids=["missing", "negative", "negative-rate"],
)
def test_malformed_spec_names_the_field(capfd, tmp_path, edit, field):
    spec = tmp_path / "gpu.yaml"
    spec.write_text(edit(H100_YAML.read_text()))
    err = one_line_error(capfd, "bound", ROOT / "examples/matmul.py", "--hw", spec)
    assert field in err and "gpu.yaml" in err
    with pytest.raises(ValueError, match=field):
        solar.hw.load_spec(spec)


def test_spec_dict_missing_field():
    d = solar.hw.load_spec("H100").to_dict()
    del d["dram_bandwidth"]
    with pytest.raises(ValueError, match="dram_bandwidth"):
        solar.hw.load_spec(d)


# ----------------------------------------------------------------------------------------------
# problem files


@pytest.mark.parametrize(
    "text, needle",
    [
        ("FILE:import torch\n\ndef get_inputs():\n    return [torch.randn(2)]\n", "no Model"),
        ("FILE:import torch\n\nclass Model(torch.nn.Module):\n    pass\n", "no get_inputs"),
        ("FILE:def broken(:\n", "SyntaxError"),
        ("FILE:import sys\nsys.exit(3)\n", "SystemExit"),
        (
            "FILE:import torch\n\nclass Model(torch.nn.Module):\n    def __init__(self):\n"
            "        raise RuntimeError('boom in init')\n\ndef get_inputs():\n    return []\n",
            "boom in init",
        ),
    ],
    ids=["no-model", "no-get-inputs", "syntax-error", "sys-exit", "init-raises"],
)
def test_bad_problem_files(capfd, tmp_path, text, needle):
    err = one_line_error(capfd, "bound", problem(tmp_path, "p", text))
    assert needle in err


def test_folder_where_a_file_is_expected(capfd, tmp_path):
    err = one_line_error(capfd, "ir", tmp_path)
    assert "is a folder" in err


def test_errors_raised_by_the_users_code(capfd, tmp_path):
    err = one_line_error(capfd, "bound", problem(tmp_path, "k", "raise KeyError('boom')"))
    assert "KeyError: 'boom'" in err
    # a framework error during tracing: one line, and torch's logged traceback is silenced
    err = one_line_error(capfd, "bound", problem(tmp_path, "mm", "return x @ torch.ones(3, 3)"))
    assert "RuntimeError" in err and "reduction dim" in err


def test_dtype_the_ir_cannot_express(capfd, tmp_path):
    f = problem(tmp_path, "u16", "return x * 2", "[torch.zeros(4, 4, dtype=torch.uint16)]")
    err = one_line_error(capfd, "bound", f)
    assert "uint16" in err and "cannot express" in err


# ----------------------------------------------------------------------------------------------
# devices


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a CPU-only build")
def test_cuda_inputs_on_a_cpu_only_build(capfd, tmp_path):
    f = problem(tmp_path, "gpu", "return x * 2", '[torch.randn(8, 8, device="cuda")]')
    err = one_line_error(capfd, "bound", f)
    assert "CUDA" in err


def test_mixed_devices_in_forward(capfd, tmp_path):
    f = problem(tmp_path, "mixed", 'return x + torch.ones(8, 8, device="cuda")')
    err = one_line_error(capfd, "bound", f)
    assert "device" in err and "cuda" in err


def test_meta_weights_with_cpu_inputs_are_fine():
    with torch.device("meta"):
        model = torch.nn.Linear(16, 16)
    on_meta, on_cpu = (
        solar.bound(model, [x]).to_dict()
        for x in (torch.empty(4, 16, device="meta"), torch.randn(4, 16))
    )
    assert on_cpu == on_meta


# ----------------------------------------------------------------------------------------------
# validation


def test_nan_producing_model_in_validation(capfd, tmp_path):
    validate = pytest.importorskip("solar.gpu.validate", reason="solar.gpu.validate not there")

    class Nan(torch.nn.Module):
        def forward(self, x):
            return torch.log(-(x * x) - 1.0)  # NaN everywhere

    report = validate.validate(Nan(), [torch.randn(8, 8)])
    assert report.status == "failed" and not report.ok
    reasons = [o.reason for o in report.outputs if not o.ok]
    assert reasons and all(r and "\n" not in r for r in reasons)
    assert "no finite element" in reasons[0]

    f = problem(tmp_path, "nan", "return torch.log(-(x * x) - 1.0)")
    code = main(["validate", str(f), "--device", "cpu"])
    out, _ = capfd.readouterr()
    assert code == 1 and "no finite element" in out


# ----------------------------------------------------------------------------------------------
# output paths: fail early, never half-write


def test_output_folder_that_does_not_exist(capfd, tmp_path):
    target = tmp_path / "nonexistent" / "dir" / "x.json"
    err = one_line_error(capfd, "bound", ROOT / "examples/matmul.py", "--out", target)
    assert "does not exist" in err and str(target) in err
    assert not (tmp_path / "nonexistent").exists()
    err = one_line_error(capfd, "bound", ROOT / "examples/matmul.py", "--out", "/nonexistent/x")
    assert "does not exist" in err


def test_output_path_that_is_a_folder_or_under_a_file(capfd, tmp_path):
    err = one_line_error(capfd, "bound", ROOT / "examples/matmul.py", "--out", tmp_path)
    assert "is a folder" in err
    plain = tmp_path / "plain.txt"
    plain.write_text("keep")
    err = one_line_error(capfd, "bound", ROOT / "examples/matmul.py", "--out", plain / "x.json")
    assert "does not exist" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.txt"]
    assert plain.read_text() == "keep"


def test_failed_analysis_writes_nothing(capfd, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    f = problem(tmp_path, "airy", "return torch.special.airy_ai(x)")
    one_line_error(capfd, "bound", f, "--out", out / "x.json")
    assert list(out.iterdir()) == []


def test_a_failing_write_leaves_the_old_file_and_no_temporary(capfd, tmp_path, monkeypatch):
    target = tmp_path / "x.json"
    target.write_text("old\n")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    err = one_line_error(capfd, "bound", ROOT / "examples/matmul.py", "--json", "--out", target)
    assert "No space left" in err
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]


def test_a_successful_write_leaves_only_the_target(capfd, tmp_path):
    target = tmp_path / "x.json"
    assert main(["bound", str(ROOT / "examples/matmul.py"), "--json", "--out", str(target)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]
    assert target.read_text().startswith("{")


# ----------------------------------------------------------------------------------------------
# a batch of bad files, and the real command line


def test_a_batch_of_bad_files(capfd, tmp_path):
    problem(tmp_path, "airy", "return torch.special.airy_ai(x)")
    problem(tmp_path, "branch", "if x.sum() > 0:\n    return x * 2\nreturn x")
    problem(tmp_path, "nomodel", "FILE:import torch\n\ndef get_inputs():\n    return []\n")
    problem(tmp_path, "good", "return x * 2")
    code = main(["bound", str(tmp_path), "--jobs", "2"])
    out, _ = capfd.readouterr()
    assert code == 1
    rows = {line.split()[0]: line for line in out.splitlines() if line.split()}
    assert rows["good"].rstrip().endswith("ok")
    for name in ("airy", "branch", "nomodel"):
        assert " error: " in rows[name]
    assert "1 of 4 bounded, 3 failed" in out


def test_exit_code_and_one_line_from_the_console_command(tmp_path):
    f = problem(tmp_path, "airy", "return torch.special.airy_ai(x)")
    proc = subprocess.run(
        [sys.executable, "-m", "solar", "bound", str(f), "--out", str(tmp_path / "x.json")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "special_airy_ai" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["airy.py"]


# -- optional packages and the network (issue 37, first-hour polish) --------------------------

BLOCK_IMPORTS = """import sys


class _NotInstalled:
    \"\"\"Imports of the packages named in SOLAR_TEST_MISSING fail as if not installed.\"\"\"

    def find_spec(self, name, path=None, target=None):
        import os

        if name.split(".")[0] in os.environ.get("SOLAR_TEST_MISSING", "").split(","):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
"""


def _without(tmp_path: Path, monkeypatch, *packages: str) -> None:
    """The processes this test starts behave as if ``packages`` were not installed (a
    ``sitecustomize`` on PYTHONPATH, which Python imports at start-up)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK_IMPORTS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("SOLAR_TEST_MISSING", ",".join(packages))


def test_missing_transformers_names_the_extra(tmp_path, monkeypatch):
    """``solar bound hf:...`` without transformers: one line naming the extra, not a bare
    ModuleNotFoundError (through the installed script)."""
    from console import run_solar

    _without(tmp_path, monkeypatch, "transformers")
    folder = tmp_path / "gpt2"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "gpt2"}')
    code, out, err = run_solar("bound", f"hf:{folder}", "--seq", "8")
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "solar: error: transformers is not installed (needed for hf: models): "
        "pip install 'solar[models]'"
    ]


def test_missing_library_of_the_model_zoo_names_the_extra(tmp_path, monkeypatch):
    _without(tmp_path, monkeypatch, "timm")
    proc = subprocess.run(
        [sys.executable, "-m", "solar.bench.zoo", "--library", "timm", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "python -m solar.bench.zoo: error: timm is not installed (needed for the model zoo): "
        "pip install 'solar[test]'"
    ]


def test_missing_extra_helper_maps_modules_to_extras():
    from solar.frontend.extras import EXTRAS, MissingExtra, optional

    missing = r"^pandas is not installed \(needed for x\): pip "
    with pytest.raises(MissingExtra, match=missing), optional("x"):
        raise ModuleNotFoundError("No module named 'pandas.core'", name="pandas.core")
    with pytest.raises(ModuleNotFoundError) as e, optional("x"):  # not optional: as it was
        raise ModuleNotFoundError("No module named 'nosuch'", name="nosuch")
    assert not isinstance(e.value, MissingExtra)
    # every extra named exists in pyproject.toml
    text = (ROOT / "pyproject.toml").read_text()
    assert all(f"\n{extra} = [" in text for extra in set(EXTRAS.values()))


def test_unreachable_hub_fails_at_once_in_one_line(tmp_path, monkeypatch):
    """A model in no folder and no cache, and a Hub that cannot be reached (an endpoint whose
    name does not resolve: ``.invalid`` is reserved): one line at once, not ~30 s of retries."""
    import time

    from console import run_solar

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.invalid")
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HTTPS_PROXY", "https_proxy",
                 "ALL_PROXY", "all_proxy"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    t0 = time.perf_counter()
    code, out, err = run_solar("bound", "hf:gpt2", "--seq", "8")
    assert time.perf_counter() - t0 < 25  # start-up and one name lookup
    assert (code, out) == (2, "")
    lines = err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"solar: error: no config.json for gpt2: not a folder, not in the Hugging Face cache "
        f"{tmp_path / 'empty'}, and the Hub cannot be reached (hub.invalid:443: "
    )
    assert lines[0].endswith("); `hf download gpt2 config.json` fetches the config alone")
