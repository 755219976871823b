"""The package's layering (docs/architecture.md), enforced on every import statement of solar,
function-local ones included: a module imports only from its own folder, the open siblings of
its layer and the layers below, except the declared plug-in points; the import graph has no
cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

import solar.cli

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "solar"

#: lowest first, one folder (or top-level module) per entry: a module imports from its own
#: folder and from the folders of the layers below. Folders of one layer are independent (none
#: imports another) unless the layer is marked open: the API layers combine their siblings.
LAYERS: list[tuple[tuple[str, ...], bool]] = [
    # numbers that carry their formula; formatting; the results' bridge to their views; the
    # garbage collector around batches of analyses; the frozen mappings results hold
    (("solar.algebra", "solar.fmt", "solar.viewable", "solar.collector", "solar.frozen"), True),
    (("solar.ir", "solar.hw"), False),  # the Affine Loop IR (pure data); GPU specs
    (("solar.interp", "solar.graph"), False),  # execute the IR; lift it to the einsum graph
    (("solar.frontend", "solar.backend"), False),  # programs -> IR; graph + spec -> bounds
    # trace + lift + bound; problem files; models by name; bounds as formulas of sizes
    (("solar.api", "solar.problem", "solar.hub", "solar.symbolic"), True),
    (("solar.questions", "solar.definition"), True),  # compare, provision, sweep; definitions
    (("solar.gpu",), False),  # validation and measurement on a device
    (("solar.report",), False),  # views: text, HTML, DataFrames, plots
    # commands, the benchmark, and the public API surface (the package and its re-exports)
    (("solar.cli", "solar.bench", "solar.__main__", "solar.llm", "solar"), True),
]
#: The declared plug-in points: imports that run upwards, each lazy (inside a function) and
#: named with why in docs/architecture.md ("Plug-in points").
ALLOWED_UP = {
    ("solar.viewable", "solar.report"),  # a result finds its views on first use
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _folder(module: str) -> tuple[int, str]:
    """(layer, folder) of ``module``: the longest entry of :data:`LAYERS` it lies in."""
    best, depth = None, -1
    for i, (prefixes, _) in enumerate(LAYERS):
        for prefix in prefixes:
            inside = module == prefix or (prefix != "solar" and module.startswith(prefix + "."))
            if inside and len(prefix) > depth:
                best, depth = (i, prefix), len(prefix)
    assert best is not None, f"{module} is in no layer of tests/test_layering.py"
    return best


def layer_of(module: str) -> int:
    return _folder(module)[0]


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


def _top_level_imports(module: str) -> set[str]:
    """The modules ``module`` imports outside any function (at import time)."""
    out = set()
    for node in ast.parse(MODULES[module].read_text()).body:
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return out


def test_no_import_runs_up_the_layers_or_across_independent_folders():
    bad = []
    for m in sorted(MODULES):
        layer, folder = _folder(m)
        for target in sorted(imports_of(m)):
            t_layer, t_folder = _folder(target)
            if (folder, t_folder) in ALLOWED_UP:
                assert target not in _top_level_imports(m), f"plug-in {m} -> {target} not lazy"
            elif t_layer > layer:
                bad.append(f"{m} (layer {layer}) imports {target} (layer {t_layer})")
            elif t_layer == layer and t_folder != folder and not LAYERS[layer][1]:
                bad.append(f"{m} imports {target}: folders of one layer are independent")
    assert not bad, "imports up the layers:\n" + "\n".join(bad)


def test_no_import_cycle():
    g = import_graph()
    g.remove_node("solar")  # the API surface re-exports from everywhere
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_the_backend_reads_graphs_not_the_ir():
    """The graph is the middle IR: nothing in solar.backend imports solar.ir."""
    bad = [
        (m, t)
        for m in MODULES
        if m.startswith("solar.backend")
        for t in imports_of(m)
        if t == "solar.ir" or t.startswith("solar.ir.")
    ]
    assert not bad, bad


def test_every_subpackage_says_its_job():
    for m, path in MODULES.items():
        if path.name == "__init__.py":
            doc = ast.get_docstring(ast.parse(path.read_text()))
            assert doc and len(doc) > 60, f"{m} has no docstring saying its job"


def test_every_command_module_is_in_the_cli_table_and_in_help():
    modules = {
        p.stem
        for p in (PACKAGE / "cli").glob("*.py")
        if p.stem not in ("__init__", "__main__", "options")
    }
    table = {c.__name__.rpartition(".")[2] for c in solar.cli.COMMANDS}
    assert table == modules
    for c in solar.cli.COMMANDS:
        assert callable(c.add_parser) and callable(c.run)
    helptext = solar.cli.build_parser().format_help()
    for name in modules:
        assert name in helptext
