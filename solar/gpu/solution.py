"""A kernel engineer's solution as SOL-ExecBench publishes it, and the function it runs.

A *solution* is a JSON file: ``name``, ``definition`` (the definition's name), ``author``,
``spec`` (``languages``; ``entry_point`` as ``"file::function"``;
``destination_passing_style``, default true: the outputs are allocated from the definition and
passed after the inputs, and the function returns nothing; ``binding``, ``torch`` for C++/CUDA;
``dependencies``; ``compile_options``) and ``sources``, a list of ``{path, content}`` files.
:func:`load_solution` reads one (errors: one line naming the file and the field);
:func:`build` writes its sources to a scratch folder and imports the entry point (Python,
Triton, CuTe DSL, cuTile, cuDNN frontend) or builds the sources as a PyTorch C++/CUDA extension
(``cuda_cpp``, ``cutlass``, ``cudnn``, ``cublas``; ``binding: torch``). A language whose
toolchain the machine lacks is one line naming what is missing. A Python file with ``run(...)``
that returns its outputs (solar's older form) is a solution too (:func:`python_file_solution`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path, PurePosixPath

__all__ = [
    "LANGUAGES",
    "Built",
    "Solution",
    "SolutionError",
    "build",
    "is_solution_json",
    "load_solution",
    "python_file_solution",
]


class SolutionError(ValueError):
    """A solution that cannot be read or built; the message is one line."""


class Kind(Enum):
    """How a language's entry point becomes a function."""

    PYTHON = "python"  # imported
    TORCH_EXTENSION = "torch extension"  # built with torch.utils.cpp_extension


@dataclass(frozen=True)
class Language:
    kind: Kind
    #: Python modules it needs (module, what to install)
    modules: tuple[tuple[str, str], ...] = ()
    #: C++ headers it needs beyond CUDA's (header, where it is looked for, what to set)
    headers: tuple[str, ...] = ()


#: SOL-ExecBench's languages (its solution format's documentation), one row each
LANGUAGES: dict[str, Language] = {
    "pytorch": Language(Kind.PYTHON),
    "python": Language(Kind.PYTHON),  # spelling of SOL-ExecBench's own test samples
    "triton": Language(Kind.PYTHON, (("triton", "triton"),)),
    "cute_dsl": Language(Kind.PYTHON, (("cutlass.cute", "nvidia-cutlass-dsl"),)),
    "cutile": Language(Kind.PYTHON, (("cuda.tile", "cuda-tile"),)),
    "cudnn_frontend": Language(Kind.PYTHON, (("cudnn", "nvidia-cudnn-frontend"),)),
    "cuda_cpp": Language(Kind.TORCH_EXTENSION),
    "cutlass": Language(Kind.TORCH_EXTENSION, headers=("cutlass/cutlass.h",)),
    "cudnn": Language(Kind.TORCH_EXTENSION, headers=("cudnn.h",)),
    "cublas": Language(Kind.TORCH_EXTENSION, headers=("cublas_v2.h",)),
}

#: file suffixes a torch extension is built from
CPP_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")


@dataclass(frozen=True)
class Solution:
    """A solution (see the module docstring). ``root``: the folder its sources already live
    in (a Python file given as it is), else ``None`` (:func:`build` writes them out)."""

    name: str
    definition: str
    author: str
    languages: tuple[str, ...]
    entry_file: str
    entry_function: str
    destination_passing_style: bool
    sources: tuple[tuple[str, str], ...]  # (relative path, content)
    binding: str | None = None
    dependencies: tuple[str, ...] = ()
    cflags: tuple[str, ...] = ()
    cuda_cflags: tuple[str, ...] = ("-O3", "--use_fast_math")
    ld_flags: tuple[str, ...] = ("-lcuda",)
    description: str = ""
    path: Path | None = None
    root: Path | None = None

    @property
    def where(self) -> str:
        return str(self.path) if self.path else f"solution {self.name!r}"

    @property
    def kind(self) -> Kind:
        return LANGUAGES[self.languages[0]].kind


def is_solution_json(path: str | Path) -> bool:
    """Whether ``path`` is a JSON file holding a solution (``spec`` and ``sources``)."""
    p = Path(path)
    if p.suffix != ".json" or not p.is_file():
        return False
    try:
        doc = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(doc, dict) and "sources" in doc and "spec" in doc


def _field(doc: dict, key: str, kind, where: str, what: str = "the solution"):
    if key not in doc:
        raise SolutionError(f"{where}: {what} has no {key!r} field")
    if not isinstance(doc[key], kind):
        raise SolutionError(f"{where}: {what}.{key} has the wrong type: {doc[key]!r}")
    return doc[key]


def _strings(v, where: str, what: str) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise SolutionError(f"{where}: {what} must be a list of strings")
    return tuple(v)


def load_solution(source: str | Path | dict) -> Solution:
    """A :class:`Solution` from a solution JSON path or its parsed dict."""
    path = None
    if isinstance(source, dict):
        doc = source
    else:
        path = Path(source)
        if not path.is_file():
            raise SolutionError(f"{path}: no such solution file")
        try:
            doc = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise SolutionError(f"{path}: not JSON: line {e.lineno}: {e.msg}") from None
    where = str(path) if path else "solution"
    if not isinstance(doc, dict):
        raise SolutionError(f"{where}: a solution is a JSON object")
    name = _field(doc, "name", str, where)
    spec = _field(doc, "spec", dict, where)
    langs = spec.get("languages", spec.get("language"))
    langs = [langs] if isinstance(langs, str) else langs
    languages = _strings(langs, where, "spec.languages")
    if not languages:
        raise SolutionError(f"{where}: spec.languages is empty")
    for lang in languages:
        if lang not in LANGUAGES:
            raise SolutionError(
                f"{where}: language {lang!r} is not one solar knows; known: {', '.join(LANGUAGES)}"
            )
    if len({LANGUAGES[lang].kind for lang in languages}) > 1:
        raise SolutionError(
            f"{where}: spec.languages mixes C++ and Python ({', '.join(languages)})"
        )
    entry = _field(spec, "entry_point", str, where, "spec")
    file, _, function = entry.rpartition("::") if "::" in entry else (entry, "", "run")
    dps = spec.get("destination_passing_style", True)
    if not isinstance(dps, bool):
        raise SolutionError(f"{where}: spec.destination_passing_style must be true or false")
    sources = []
    for i, s in enumerate(_field(doc, "sources", list, where)):
        what = f"sources[{i}]"
        if not isinstance(s, dict):
            raise SolutionError(f"{where}: {what} must be an object with path and content")
        rel = _field(s, "path", str, where, what)
        p = PurePosixPath(rel)
        if p.is_absolute() or ".." in p.parts or not rel:
            raise SolutionError(f"{where}: {what}.path {rel!r} must be relative, without '..'")
        sources.append((str(p), _field(s, "content", str, where, what)))
    paths = [p for p, _ in sources]
    if len(set(paths)) != len(paths):
        dup = next(p for p in paths if paths.count(p) > 1)
        raise SolutionError(f"{where}: source {dup!r} is listed twice")
    if str(PurePosixPath(file)) not in paths:
        raise SolutionError(
            f"{where}: the entry point's file {file!r} is not among the sources "
            f"({', '.join(paths)})"
        )
    options = spec.get("compile_options") or {}
    if not isinstance(options, dict):
        raise SolutionError(f"{where}: spec.compile_options must be an object")
    flags = {
        k: _strings(options[k], where, f"compile_options.{k}")
        for k in ("cflags", "cuda_cflags", "ld_flags")
        if k in options
    }
    binding = spec.get("binding")
    if LANGUAGES[languages[0]].kind is Kind.TORCH_EXTENSION and binding not in (None, "torch"):
        raise SolutionError(
            f"{where}: binding {binding!r} is not supported; solar builds C++/CUDA solutions "
            'as PyTorch extensions ("binding": "torch")'
        )
    return Solution(
        name,
        str(doc.get("definition") or ""),
        str(doc.get("author") or ""),
        languages,
        str(PurePosixPath(file)),
        function,
        dps,
        tuple(sources),
        binding,
        _strings(spec.get("dependencies") or [], where, "spec.dependencies"),
        **flags,
        description=str(doc.get("description") or ""),
        path=path,
    )


def python_file_solution(path: str | Path) -> Solution:
    """A Python file whose ``run(...)`` returns the outputs, used where it lies."""
    p = Path(path)
    if not p.is_file():
        raise SolutionError(f"{p}: no such file")
    return Solution(
        p.stem,
        "",
        "",
        ("pytorch",),
        p.name,
        "run",
        False,
        ((p.name, p.read_text()),),
        path=p,
        root=p.parent.resolve(),
    )


@dataclass(frozen=True)
class Built:
    """A solution's entry function, ready to call, and where its sources were written."""

    solution: Solution
    function: Callable
    folder: Path


def missing_toolchain(sol: Solution) -> str | None:
    """What the machine lacks to build ``sol`` (one phrase), or ``None``."""
    for lang in sol.languages:
        for module, package in LANGUAGES[lang].modules:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                return f"language {lang!r} needs the Python module {module} (pip install {package})"
    if sol.kind is not Kind.TORCH_EXTENSION:
        return None
    from torch.utils import cpp_extension

    if cpp_extension.CUDA_HOME is None or not _nvcc(cpp_extension.CUDA_HOME):
        return (
            f"language {sol.languages[0]!r} is built with nvcc, which is not on this machine "
            "(install the CUDA toolkit or set CUDA_HOME)"
        )
    if not cpp_extension.is_ninja_available():
        return f"language {sol.languages[0]!r} is built with ninja (pip install ninja)"
    for lang in sol.languages:
        for header in LANGUAGES[lang].headers:
            if _header_dir(header) is None:
                return (
                    f"language {lang!r} needs the header {header}, found in none of "
                    f"{', '.join(_include_dirs())} (set CUTLASS_DIR or CPATH)"
                )
    return None


def _nvcc(cuda_home: str) -> bool:
    return Path(cuda_home, "bin", "nvcc").is_file() or shutil.which("nvcc") is not None


def _include_dirs() -> list[str]:
    """Where C++ headers are looked for: CUTLASS_DIR's, CPATH, CUDA's, the cuDNN wheel's."""
    from torch.utils import cpp_extension

    dirs = []
    cutlass = os.environ.get("CUTLASS_DIR", "/usr/local/cutlass")
    dirs += [f"{cutlass}/include", f"{cutlass}/tools/util/include"]
    dirs += [d for d in os.environ.get("CPATH", "").split(os.pathsep) if d]
    if cpp_extension.CUDA_HOME:
        dirs.append(str(Path(cpp_extension.CUDA_HOME, "include")))
    cudnn = importlib.util.find_spec("nvidia.cudnn") if importlib.util.find_spec("nvidia") else None
    if cudnn is not None:
        dirs += [str(Path(loc, "include")) for loc in cudnn.submodule_search_locations or ()]
    dirs.append("/usr/include")
    return dirs


def _header_dir(header: str) -> str | None:
    return next((d for d in _include_dirs() if Path(d, header).is_file()), None)


def build(sol: Solution, folder: str | Path | None = None) -> Built:
    """Write ``sol``'s sources into ``folder`` (default: a fresh scratch folder) and import or
    build its entry point. Raises :class:`SolutionError` (one line) when the toolchain is
    missing, the build or the import fails, or the entry function is not there."""
    missing = missing_toolchain(sol)
    if missing:
        raise SolutionError(f"{sol.where}: cannot build {sol.name!r}: {missing}")
    if sol.root is not None:
        where = sol.root
    else:
        where = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="solar-solution-"))
        for rel, content in sol.sources:
            target = where / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
    module = _import(sol, where) if sol.kind is Kind.PYTHON else _extension(sol, where)
    fn = getattr(module, sol.entry_function, None)
    if not callable(fn):
        raise SolutionError(
            f"{sol.where}: {sol.entry_file} defines no function {sol.entry_function!r}"
        )
    return Built(sol, fn, where)


def _module_name(sol: Solution, what: str) -> str:
    return "solar_solution_" + re.sub(r"\W", "_", f"{sol.name}_{what}")


def _import(sol: Solution, where: Path):
    """The entry file imported as a module; its folder on ``sys.path`` for sibling imports."""
    file = where / sol.entry_file
    name = _module_name(sol, sol.entry_file)
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise SolutionError(f"{sol.where}: {sol.entry_file} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = str(file.parent)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:
        raise SolutionError(
            f"{sol.where}: importing {sol.entry_file} failed: {type(e).__name__}: {_first_line(e)}"
        ) from e
    return module


def _extension(sol: Solution, where: Path):
    """The C++/CUDA sources built as one PyTorch extension (its own ``PYBIND11_MODULE``
    exposes the entry function), with the solution's compile options."""
    from torch.utils import cpp_extension

    sources = [str(where / p) for p, _ in sol.sources if Path(p).suffix in CPP_SUFFIXES]
    if not sources:
        raise SolutionError(f"{sol.where}: no C++/CUDA source ({', '.join(CPP_SUFFIXES)})")
    includes = [str(where), *(d for d in _include_dirs() if Path(d).is_dir())]
    try:
        return cpp_extension.load(
            name=_module_name(sol, "ext"),
            sources=sources,
            extra_cflags=list(sol.cflags),
            extra_cuda_cflags=list(sol.cuda_cflags),
            extra_ldflags=list(sol.ld_flags),
            extra_include_paths=includes,
            build_directory=str(where),
            verbose=False,
        )
    except (Exception, SystemExit) as e:
        raise SolutionError(
            f"{sol.where}: building {sol.name!r} failed: {type(e).__name__}: {_first_line(e)}"
        ) from e


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else ""
