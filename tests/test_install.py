"""An installed solar works outside a checkout: the wheel built from this checkout carries the
GPU catalogue, and installed (not editable) into a fresh virtual environment in a temporary
folder it runs ``solar specs``, ``solar bound`` of an example and a Python ``solar.bound`` from
another temporary folder.

The fresh environment sees the test environment's third-party packages (torch, numpy, ...)
through a ``.pth`` file naming their folder, so nothing is downloaded; a path line of a
``.pth`` file does not run that folder's own ``.pth`` files, so the editable install of solar
there (its import finder) stays out, and every run asserts that the ``solar`` it imported is
the one installed in the fresh environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "solar" / "hw" / "catalog"
EXAMPLE = ROOT / "examples" / "mlp.py"


def _env() -> dict[str, str]:
    """The environment of every child: no PYTHONPATH (it would put a checkout first)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INDEX": "1", "COLUMNS": "140"}


def _run(argv, cwd: Path, timeout: float = 120) -> str:
    r = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=_env(), capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert r.returncode == 0, f"{' '.join(map(str, argv))}:\n{r.stdout}\n{r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    """Build the wheel from a copy of the checkout's package files and install it into a fresh
    venv: ``{"wheel", "python", "solar", "site", "work"}``."""
    base = tmp_path_factory.mktemp("install")
    src = base / "src"  # a copy, so the build leaves no build/ or egg-info in the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "solar", src / "solar", ignore=shutil.ignore_patterns("__pycache__"))
    wheels = base / "wheels"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", wheels, src],
        cwd=base,
    )  # fmt: skip
    (wheel,) = wheels.glob("solar-*.whl")

    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(env_dir)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(
        _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base)
        .strip()
    )  # fmt: skip
    outer_site = sysconfig.get_paths()["purelib"]
    (site / "outer_packages.pth").write_text(outer_site + "\n")
    # the outer pip, run by the fresh interpreter, installs into the fresh environment
    _run([python, "-m", "pip", "install", "--no-deps", "-q", wheel], cwd=base)
    solar = python.with_name("solar.exe" if os.name == "nt" else "solar")
    assert solar.is_file(), "the wheel installed no solar console script"
    work = base / "elsewhere"
    work.mkdir()
    return {"wheel": wheel, "python": python, "solar": solar, "site": site, "work": work}


def test_the_wheel_carries_every_catalogue_yaml(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    catalogue = sorted(p.name for p in CATALOGUE.glob("*.yaml"))
    assert len(catalogue) >= 7
    missing = [n for n in catalogue if f"solar/hw/catalog/{n}" not in names]
    assert not missing, f"the wheel lacks {missing}"


def test_installed_solar_is_the_wheel_not_the_checkout(installed):
    where = _run(
        [installed["python"], "-c", "import solar, solar.hw; print(solar.__file__); "
         "print(solar.hw.catalogue_dirs()[-1])"],
        cwd=installed["work"],
    ).split()  # fmt: skip
    site = installed["site"].resolve()
    assert Path(where[0]).resolve().is_relative_to(site), where
    assert Path(where[1]).resolve() == site / "solar" / "hw" / "catalog"


def test_solar_specs_lists_the_catalogue(installed):
    out = _run([installed["solar"], "specs"], cwd=installed["work"])
    keys = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert keys == sorted(p.stem for p in CATALOGUE.glob("*.yaml"))


def test_solar_bound_of_an_example(installed):
    shutil.copy(EXAMPLE, installed["work"] / EXAMPLE.name)
    out = _run([installed["solar"], "bound", EXAMPLE.name, "--hw", "H100"], installed["work"])
    assert "NVIDIA H100 SXM5 80GB" in out and "cache-aware" in out


def test_python_bound(installed):
    script = (
        "import torch, solar\n"
        "b = solar.bound(torch.nn.Linear(64, 32, bias=False), (torch.randn(8, 64),), hw='H100')\n"
        "print(solar.__file__)\n"
        "print(b.hw, b.flops['cuda_fp32'])\n"
    )
    out = _run([installed["python"], "-c", script], cwd=installed["work"]).splitlines()
    assert Path(out[0]).resolve().is_relative_to(installed["site"].resolve())
    # fp32 matmul on CUDA cores (no TF32 by default): 2 flops per multiply-add, 8 x 64 x 32
    assert out[1] == f"NVIDIA H100 SXM5 80GB {2 * 8 * 64 * 32}"
