"""Fast start: what needs no framework imports none. ``solar --help``, ``solar specs`` and
``import solar`` leave torch and jax out of ``sys.modules`` (checked in a fresh process, the
console script run as pip installed it); the public names still resolve on first use. Timings
are the benchmark's (``python -m solar.bench startup``), not asserted here."""

from __future__ import annotations

import os
import subprocess
import sys

from console import ROOT, SCRIPT

import solar
import solar.cli

HEAVY = ("torch", "jax", "matplotlib", "pandas")


def _modules_after(code: str) -> set[str]:
    """The heavy frameworks in ``sys.modules`` after running ``code`` in a fresh process."""
    probe = (
        "import sys, io, contextlib\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        + "".join(f"    {line}\n" for line in code.splitlines())
        + f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    r = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert r.returncode == 0, r.stderr
    return set(r.stdout.split())


def _console(*argv: str) -> str:
    """Run the installed console script's code with ``argv`` (as ``solar ARGV`` does)."""
    return (
        "import runpy, sys\n"
        f"sys.argv = [{str(SCRIPT)!r}, *{list(argv)!r}]\n"
        "try:\n"
        f"    runpy.run_path({str(SCRIPT)!r}, run_name='__main__')\n"
        "except SystemExit as e:\n"
        "    assert e.code in (0, None), e.code"
    )


def test_help_and_specs_import_no_framework():
    assert SCRIPT.exists()
    assert _modules_after(_console("--help")) == set()
    assert _modules_after(_console("specs")) == set()


def test_import_solar_imports_no_framework_until_a_name_is_used():
    assert _modules_after("import solar") == set()
    assert _modules_after("import solar; solar.load_spec('H100')") == set()
    # the API and the core below it (IR, graph, backends) need no framework (issue 23): the
    # frontend of the model's framework is imported when a model is traced
    assert _modules_after("import solar; solar.bound") == set()


def test_public_names_resolve_to_their_modules():
    from solar.api import bound
    from solar.hw import load_spec

    assert solar.bound is bound and solar.load_spec is load_spec
    assert set(solar.__all__) <= set(dir(solar))
    for name in solar.__all__:
        assert getattr(solar, name) is not None
    assert solar.hw.load_spec is load_spec  # subpackages are attributes too
    try:
        solar.no_such_name  # noqa: B018
    except AttributeError as e:
        assert "no_such_name" in str(e)
    else:
        raise AssertionError("solar.no_such_name resolved")


def test_the_command_table_gives_each_command_its_own_help():
    full = solar.cli.build_parser()
    sub = next(a for a in full._actions if a.dest == "command")
    helps = {a.dest: a.help for a in sub._choices_actions}
    assert helps == {c.name: c.help for c in solar.cli.COMMANDS}


def test_the_startup_benchmark_measures_each_command_against_python():
    from solar.bench.startup import markdown, measure

    result = measure(repeat=1)
    assert list(result) == [
        "python -c pass",
        'python -c "import solar"',
        "solar --help",
        "solar specs",
    ]
    for label, r in result.items():
        assert r["median_s"] > 0 and len(r["runs_s"]) == 1
        assert r["imports"] == [], label  # the probe saw neither torch nor jax
    table = markdown(result, 1)
    assert table.count("\n| `") == 4 and "| `solar specs` |" in table
