"""Solutions as SOL-ExecBench publishes them, scored on the CPU (``--device cpu``: outputs,
defences and traces; the times are the host's): solution JSON read and built, destination-
passing style, correctness by a workload's tolerance, each kind of gamed solution caught, a
missing toolchain in one line, traces in SOL-ExecBench's shape with solar's numbers."""

import json
import math
import re
from pathlib import Path

import pytest
import torch
from console import run_solar

from solar.definition import load_definition, load_workloads
from solar.definition.schema import Tolerance
from solar.gpu.correctness import compare_outputs
from solar.gpu.defences import GUARDED
from solar.gpu.score import WorkloadScore, score_solution, violation
from solar.gpu.solution import SolutionError, build, load_solution, missing_toolchain
from solar.gpu.trace import trace_record
from solar.hw import load_spec

EX = Path(__file__).resolve().parent.parent / "bench" / "sebench_examples"
H100 = load_spec("H100")


@pytest.fixture
def guarded(monkeypatch):
    """Puts back whatever a gamed solution replaces (the test process goes on after it)."""
    import importlib

    for module, attr in GUARDED:
        *owner, name = attr.split(".")
        obj = importlib.import_module(module)
        for part in owner:
            obj = getattr(obj, part)
        monkeypatch.setattr(obj, name, getattr(obj, name))


def _score(problem: Path, solution: dict | Path, n: int = 1):
    defn = load_definition(problem / "definition.json")
    wls = load_workloads(problem / "workload.jsonl", defn)[:n]
    return score_solution(defn, wls, load_solution(solution), H100, device="cpu", budget_s=0.01)


def _solution(name: str, source: str, *, dps: bool, definition="custom_matmul", **spec) -> dict:
    return {
        "name": name,
        "definition": definition,
        "author": "test",
        "spec": {
            "languages": ["pytorch"],
            "entry_point": "kernel.py::run",
            "destination_passing_style": dps,
            **spec,
        },
        "sources": [{"path": "kernel.py", "content": source}],
    }


MATMUL = EX / "samples" / "custom_inputs_matmul"


def test_published_python_solution_scored_on_cpu():
    (row,) = _score(MATMUL, MATMUL / "solution_python.json")
    assert row.status == "PASSED" and row.correctness.max_absolute_error == 0.0
    # A @ B at M=128, K=256, N=128 in fp32: 2*M*K*N flops at 66.9 TFLOP/s is below the
    # 500 ns launch floor, the bound
    assert row.t_sol == pytest.approx(500e-9) and row.bound_by == "latency"
    assert row.t_k > 0 and row.t_b > 0
    assert row.score == pytest.approx(1 / (1 + (row.t_k - row.t_sol) / (row.t_b - row.t_sol)))


def test_a_python_file_with_run_is_still_a_solution(tmp_path):
    """solar's older form: a Python file whose run(...) returns the outputs, used in place."""
    from solar.gpu.solution import python_file_solution

    (tmp_path / "helper.py").write_text("def mm(a, b):\n    return a @ b\n")
    (tmp_path / "mine.py").write_text(
        "from helper import mm\n\ndef run(A, B):\n    return mm(A, B)\n"
    )
    sol = python_file_solution(tmp_path / "mine.py")
    assert not sol.destination_passing_style and sol.root == tmp_path.resolve()
    defn = load_definition(MATMUL / "definition.json")
    wls = load_workloads(MATMUL / "workload.jsonl", defn)[:1]
    (row,) = score_solution(defn, wls, sol, H100, device="cpu", budget_s=0.01)
    assert row.status == "PASSED"


def test_destination_passing_style_is_the_default():
    """No destination_passing_style: the outputs are allocated and passed after the inputs."""
    seen = "def run(A, B, C):\n    assert C.shape == (A.shape[0], B.shape[1])\n"
    src = "import torch\n" + seen + "    torch.matmul(A, B, out=C)\n"
    doc = _solution("dps", src, dps=True)
    del doc["spec"]["destination_passing_style"]
    assert load_solution(doc).destination_passing_style is True
    (row,) = _score(MATMUL, doc)
    assert row.status == "PASSED"
    # the same function returning nothing under dps=false returns no outputs
    (row,) = _score(MATMUL, _solution("nodps", src.replace(", C)", ", C=None)"), dps=False))
    assert row.status in ("RUNTIME_ERROR", "INCORRECT_SHAPE")


def test_wrong_and_unwritten_outputs_are_incorrect():
    wrong = _solution("wrong", "def run(A, B, C):\n    C.copy_(A @ B * 1.1)\n", dps=True)
    (row,) = _score(MATMUL, wrong)
    assert row.status == "INCORRECT_NUMERICAL" and row.score is None
    unwritten = _solution("lazy", "def run(A, B, C):\n    pass\n", dps=True)
    (row,) = _score(MATMUL, unwritten)
    assert row.status == "INCORRECT_NUMERICAL" and "all zeros" in row.note
    two = _solution("two", "def run(A, B):\n    return A @ B, A\n", dps=False)
    (row,) = _score(MATMUL, two)
    assert row.status == "INCORRECT_SHAPE"
    assert "the solution returns 2 outputs, the definition declares 1 output (C)" in row.note


def test_tolerance_rule_by_hand():
    ref = {"y": torch.tensor([1.0, 2.0, 100.0, 0.0])}
    # errors 0.01, 0.03, 0.9, 0.02: bounds atol + rtol*|ref| = 0.02, 0.03, 1.01, 0.01
    got = {"y": torch.tensor([1.01, 2.03, 100.9, 0.02])}
    tol = Tolerance(max_atol=0.01, max_rtol=0.01, required_matched_ratio=0.75)
    c = compare_outputs(ref, got, tol)
    assert c.passed and c.matched_ratio == 0.75
    assert c.max_absolute_error == pytest.approx(0.9, rel=1e-5)
    # relative error |err| / max(|ref|, atol): 0.02 / 0.01 = 2 is the worst
    assert c.max_relative_error == pytest.approx(2.0, rel=1e-4)
    assert not compare_outputs(ref, got, Tolerance(0.01, 0.01, 0.99)).passed
    assert not compare_outputs(ref, got, Tolerance(0.01, 0.01, 0.75, max_error_cap=0.5)).passed
    nan = compare_outputs(ref, {"y": torch.tensor([1.0, 2.0, math.nan, 0.0])}, tol)
    assert nan.status == "INCORRECT_NUMERICAL" and nan.has_nan
    ninf = {"y": torch.tensor([-math.inf, 1.0])}
    assert not compare_outputs(ninf, ninf, Tolerance()).passed
    assert compare_outputs(ninf, ninf, Tolerance(allow_negative_inf=True)).passed
    bf = compare_outputs(ref, {"y": ref["y"].bfloat16()}, tol)
    assert bf.status == "INCORRECT_DTYPE"


RMSNORM = EX / "samples" / "rmsnorm"
HACKS = EX / "hack_samples" / "rmsnorm"


@pytest.mark.parametrize(
    "hack, says",
    [
        ("solution_hack_lazy_output.json", "not a plain torch.Tensor"),
        ("solution_hack_monkey_patch.json", "replaced torch.cuda.Event.elapsed_time"),
        ("solution_hack_thread_injection.json", "thread(s) running"),
    ],
)
def test_published_gamed_solutions_are_caught(guarded, hack, says):
    """SOL-ExecBench's own gamed rmsnorm solutions: each one a REWARD_HACK, never a score."""
    (row,) = _score(RMSNORM, HACKS / hack)
    assert row.status == "REWARD_HACK" and says in row.note and row.score is None


def test_harness_timing_functions_replaced(guarded):
    """A solution that replaces solar's timer (so the scorer would read its numbers) or the
    host clock, at import or on a call, is caught."""
    for patch in (
        "import solar.gpu.measure as m\nm.time_fn = lambda *a, **k: None\n",
        "import solar.gpu.score as s\ns.time_pair = lambda *a, **k: None\n",
        "import time\ntime.perf_counter = lambda: 0.0\n",
    ):
        for where in ("import", "call"):
            body = "def run(A, B):\n"
            src = patch + body + "    return A @ B\n"
            if where == "call":
                src = body + "".join(f"    {line}\n" for line in patch.splitlines())
                src += "    return A @ B\n"
            (row,) = _score(MATMUL, _solution("gamed", src, dps=False))
            assert row.status == "REWARD_HACK", (patch, where, row)
            assert "the solution replaced" in row.note


def test_stream_injection():
    """SOL-ExecBench's stream-injection sample queues work on another CUDA stream, which the
    timed stream's events do not see: on a GPU it is caught (check_one_stream); on the CPU it
    fails to run (no CUDA stream), never a score either way."""
    (row,) = _score(RMSNORM, HACKS / "solution_hack_stream_injection.json")
    assert row.score is None
    if torch.cuda.is_available():
        assert row.status == "REWARD_HACK" and "another CUDA stream" in row.note
    else:
        assert row.status == "RUNTIME_ERROR" and "CUDA" in row.note


def test_violation_reported_with_the_numbers_never_capped():
    assert violation(2e-6, 5e-6, 1e-6, "dram") == ""
    said = violation(0.5e-6, 5e-6, 1e-6, "dram")
    assert said.startswith("the solution (500 ns) faster than solar's bound T_SOL = 1 us")
    assert "bound by dram" in said
    assert "the reference (800 ns)" in violation(2e-6, 0.8e-6, 1e-6, "dram")
    row = WorkloadScore(
        "u",
        {"n": 1},
        "PASSED",
        t_k=0.5e-6,
        t_b=5e-6,
        t_sol=1e-6,
        score=1 / (1 + (0.5e-6 - 1e-6) / 4e-6),
        violation=said,
    )
    assert row.score == pytest.approx(8 / 7)  # above 1, as computed
    from solar.cli.score import score_table

    table = score_table("d", "s", "H100", "cache_aware", [row])
    assert "| 1.143 | PASSED VIOLATION |" in table and said in table


def test_trace_record_shape():
    (row,) = _score(MATMUL, MATMUL / "solution_python.json")
    env = {"hardware": "cpu", "libs": {"torch": torch.__version__}}
    t = trace_record("custom_matmul", "custom_matmul_pytorch", row, env, H100.name)
    assert set(t) == {"definition", "solution", "workload", "evaluation", "sol"}
    assert t["workload"] == json.loads((MATMUL / "workload.jsonl").read_text().splitlines()[0])
    ev = t["evaluation"]
    assert ev["status"] == "PASSED" and ev["environment"] == env
    assert set(ev["correctness"]) == {
        "max_relative_error",
        "max_absolute_error",
        "has_nan",
        "has_inf",
    }
    perf = ev["performance"]
    assert perf["latency_ms"] == pytest.approx(row.mean_k * 1e3)
    assert perf["speedup_factor"] == pytest.approx(row.mean_b / row.mean_k)
    assert t["sol"]["t_sol_ms"] == pytest.approx(5e-4) and t["sol"]["bound_by"] == "latency"
    assert t["sol"]["sol_score"] == row.score and t["sol"]["violation"] is None
    wrong = _score(MATMUL, _solution("w", "def run(A, B, C):\n    C.fill_(1)\n", dps=True))[0]
    ev = trace_record("custom_matmul", "w", wrong, env, H100.name)["evaluation"]
    assert ev["status"] == "INCORRECT_NUMERICAL" and ev["performance"] is None
    assert ev["correctness"] is not None


def test_solution_json_errors_are_one_line():
    good = _solution("x", "def run(A, B):\n    return A @ B\n", dps=False)
    for change, says in (
        (lambda d: d["spec"].update(languages=["fortran"]), "language 'fortran' is not one"),
        (lambda d: d["spec"].update(entry_point="other.py::run"), "'other.py' is not among"),
        (lambda d: d["sources"][0].update(path="../kernel.py"), "must be relative"),
        (lambda d: d["sources"].append(dict(d["sources"][0])), "listed twice"),
        (lambda d: d["spec"].update(languages=["pytorch", "cuda_cpp"]), "mixes C++ and Python"),
        (lambda d: d.pop("spec"), "has no 'spec' field"),
    ):
        doc = json.loads(json.dumps(good))
        change(doc)
        with pytest.raises(SolutionError, match=re.escape(says)) as e:
            load_solution(doc)
        assert "\n" not in str(e.value)


def test_missing_toolchain_names_what_is_missing():
    import importlib.util

    triton = load_solution(EX / "examples" / "triton" / "rmsnorm" / "solution_triton.json")
    if importlib.util.find_spec("triton") is None:
        assert missing_toolchain(triton) == (
            "language 'triton' needs the Python module triton (pip install triton)"
        )
        with pytest.raises(SolutionError, match="cannot build 'my_rmsnorm_triton'"):
            build(triton)
    cute = load_solution(
        EX / "examples" / "cute_dsl" / "jamba_attn_proj" / "solution_cute_dsl.json"
    )
    if importlib.util.find_spec("cutlass") is None:
        assert "needs the Python module cutlass.cute" in missing_toolchain(cute)
    from torch.utils import cpp_extension

    cuda = load_solution(EX / "examples" / "cuda_cpp" / "rmsnorm" / "solution_cuda.json")
    if cpp_extension.CUDA_HOME is None:
        assert "built with nvcc, which is not on this machine" in missing_toolchain(cuda)


def test_cli_scores_a_solution_json(tmp_path):
    """The installed script, as a user runs it: a solution JSON alone (its folder the
    problem), --json traces; a solution of another definition in one line."""
    rc, out, err = run_solar(
        "score",
        MATMUL / "solution_python.json",
        "--device",
        "cpu",
        "--sample",
        "1",
        "--json",
        "--budget",
        "0.01",
    )
    assert rc == 0, err
    (line,) = out.strip().splitlines()
    t = json.loads(line)
    assert t["evaluation"]["status"] == "PASSED" and t["sol"]["bound_level"] == "cache_aware"
    rc, out, err = run_solar(
        "score", MATMUL, "--solution", RMSNORM / "solution_triton.json", "--device", "cpu"
    )
    assert rc != 0 and err.strip().count("\n") == 0
    assert "solves definition 'rmsnorm_h4096', not 'custom_matmul'" in err


def test_gpu_bench_lists_the_public_solutions():
    """bench/gpu_sebench.py --dry-run (CPU): every public solution JSON with its problem, one
    of each copy, the gamed ones against SOL-ExecBench's rmsnorm problem; each one reads."""
    from console import run_bench_script

    r = run_bench_script("gpu_sebench.py", "unused", "--dry-run")
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 19
    assert all(line.startswith("-m solar score ") for line in lines)
    hacks = [line for line in lines if "hack_samples" in line]
    assert len(hacks) == 4 and all("samples/rmsnorm --solution" in line for line in hacks)
    for line in lines:
        path = next(Path(w) for w in line.split() if w.endswith(".json"))
        assert load_solution(path).name
