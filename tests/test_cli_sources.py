"""Kernels with no line of the user's code (an optimizer's, autograd's) name no source, also
through the installed ``solar`` script, whose own launcher is not the user's code (it was
named ``solar:8`` once)."""

import json

from console import ROOT, run_solar


def test_training_step_sources_name_only_the_problem_file():
    code, out, err = run_solar("bound", ROOT / "examples" / "train_resnet.py", "--json")
    assert code == 0, err
    sources = {k["source"] for k in json.loads(out)["kernels"]}
    assert "" in sources  # the optimizer's kernels
    assert {s.split(":")[0] for s in sources - {""}} == {"train_resnet.py"}
