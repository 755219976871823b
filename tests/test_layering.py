"""The package's layering (docs/architecture.md), enforced on every import statement of solar,
function-local ones included: a module imports only from its own layer or the layers below,
and the import graph has no cycle beyond a pair of modules."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

import solar.cli

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "solar"

#: lowest first; a module may import from its own layer and every layer below it
LAYERS: list[tuple[str, ...]] = [
    # formatting helpers, the results' bridge to their views, the garbage collector around
    # batches of analyses; symbolic sizes (ints and floats
    # that carry their formula), the regions where formulas hold, walks that evaluate them,
    # expressions compiled for evaluation at many points, sums of symbolic times in one pass,
    # a graph's sizes located once and rebuilt at other points
    (
        "solar.fmt",
        "solar.viewable",
        "solar.collector",
        "solar.algebra",
    ),
    ("solar.ir", "solar.hw"),  # the Affine Loop IR (pure data, no torch or jax); GPU specs
    ("solar.interp",),  # interpreters of the IR on a framework's arrays (torch)
    ("solar.frontend",),  # PyTorch and JAX programs -> IR
    ("solar.graph",),  # IR -> einsum graph
    ("solar.backend",),  # einsum graph + spec -> bounds (results: solar.backend.result)
    (
        "solar.api",
        "solar.problem",
        "solar.hub",
        "solar.symbolic",
    ),  # trace + lift + bound; problem files; models by name; bounds as formulas of sizes
    ("solar.questions", "solar.definition"),  # compare, provision, sweep, batches; definitions
    ("solar.gpu",),  # validation and measurement on a device
    ("solar.report",),  # views: text, HTML, DataFrames, plots
    # commands, the benchmark, and the public API surface (the package and its re-exports)
    ("solar.cli", "solar.bench", "solar.__main__", "solar.llm", "solar"),
]
#: the one import that runs upwards: results reach their views, lazily (solar/viewable.py)
ALLOWED_UP = {("solar.viewable", "solar.report")}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer_of(module: str) -> int:
    best, depth = None, -1
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            inside = module == prefix or (prefix != "solar" and module.startswith(prefix + "."))
            if inside and len(prefix) > depth:
                best, depth = i, len(prefix)
    assert best is not None, f"{module} is in no layer of tests/test_layering.py"
    return best


def imports_of(module: str) -> set[str]:
    """The solar modules ``module`` imports, anywhere in its body."""
    tree = ast.parse(MODULES[module].read_text())
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for a in node.names:  # ``from pkg import submodule`` imports the submodule
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base)
    return {m for m in out if m == "solar" or m.startswith("solar.")}


def import_graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for m in MODULES:
        g.add_node(m)
        for target in imports_of(m):
            while target not in MODULES and "." in target:  # ``import a.b.c`` of a name
                target = target.rpartition(".")[0]
            if target != m:
                g.add_edge(m, target)
    return g


def test_every_module_has_a_layer():
    for m in MODULES:
        layer_of(m)


def test_no_import_runs_up_the_layers():
    upward = []
    for m in sorted(MODULES):
        for target in sorted(imports_of(m)):
            if layer_of(target) > layer_of(m) and (m, _prefix(target)) not in ALLOWED_UP:
                upward.append(f"{m} (layer {layer_of(m)}) imports {target} ({layer_of(target)})")
    assert not upward, "imports up the layers:\n" + "\n".join(upward)


def _prefix(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_no_import_cycle_beyond_a_module_pair():
    g = import_graph()
    g.remove_node("solar")  # the API surface re-exports from everywhere
    big = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 2]
    assert not big, f"import cycles: {big}"


def test_every_subpackage_says_its_job():
    for m, path in MODULES.items():
        if path.name == "__init__.py":
            doc = ast.get_docstring(ast.parse(path.read_text()))
            assert doc and len(doc) > 60, f"{m} has no docstring saying its job"


def test_every_command_module_is_in_the_cli_table_and_in_help():
    modules = {
        p.stem
        for p in (PACKAGE / "cli").glob("*.py")
        if p.stem not in ("__init__", "__main__", "common")
    }
    table = {c.__name__.rpartition(".")[2] for c in solar.cli.COMMANDS}
    assert table == modules
    for c in solar.cli.COMMANDS:
        assert callable(c.add_parser) and callable(c.run)
    helptext = solar.cli.build_parser().format_help()
    for name in modules:
        assert name in helptext
