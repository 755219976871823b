"""The GPU catalogue and ``load_spec``: the YAML files of ``solar/hw/catalog/`` (package data
of the wheel; ``hw_specs/`` in a checkout links to it) and of the folders named by
``SOLAR_HW_SPECS``, found by GPU name, key or alias, each file parsed once per version.

A catalogue entry describes a real GPU and is held to every check of
:func:`solar.hw.spec._check_spec`; a file given by path or a mapping may describe a what-if
GPU (see :func:`load_spec`).
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

import yaml

from solar.hw.spec import HardwareSpec, SpecError, _spec_from_mapping

__all__ = ["CATALOGUE", "ENV_VAR", "catalogue_dirs", "list_specs", "load_spec", "resolve_name"]

#: Catalogue directories are looked up in this environment variable first (os.pathsep list).
ENV_VAR = "SOLAR_HW_SPECS"
#: The catalogue shipped in the package (the one source; ``hw_specs/`` in a checkout links here).
CATALOGUE = Path(__file__).resolve().parent / "catalog"

_DICT = "<dict>"


# libyaml's loader when PyYAML has it (about 10x faster; the same safe subset of YAML)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read_file(path: Path, strict: bool) -> HardwareSpec:
    where = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecError(f"hw spec {path}: cannot read it ({e.strerror or e})") from None
    try:
        data = yaml.load(text, Loader=_YAML_LOADER)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise SpecError(f"hw spec {where}: not valid YAML{at}: {problem}") from None
    if data is None:
        raise SpecError(f"hw spec {where}: the file is empty")
    if isinstance(data, Mapping) and "path" in data:
        data = {k: v for k, v in data.items() if k != "path"}
    return _spec_from_mapping(data, where, default_key=path.stem, path=str(path), strict=strict)


# ---------------------------------------------------------------------------------------------
# The catalogue


def catalogue_dirs() -> list[Path]:
    """Directories searched for ``*.yaml`` specs, first match wins: each entry of the
    ``SOLAR_HW_SPECS`` environment variable (os.pathsep-separated), then the catalogue shipped
    in the package, ``solar/hw/catalog/`` (package data of the wheel, so an installed solar
    has it; in a checkout ``hw_specs/`` is a link to it, the place people edit)."""
    dirs = [Path(p).expanduser() for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]
    dirs.append(CATALOGUE)
    out: list[Path] = []
    for d in dirs:
        if d.is_dir() and d.resolve() not in {o.resolve() for o in out}:
            out.append(d)
    return out


#: parsed spec files by (resolved path, strictness), each with the version it was read at
#: (mtime, size); the least recently used beyond :data:`_FILE_CACHE_MAX` are dropped
_FILE_CACHE: OrderedDict[tuple[Path, bool], tuple[tuple[int, int], HardwareSpec]] = OrderedDict()
_FILE_CACHE_MAX = 64
_FILE_CACHE_LOCK = threading.Lock()


def _load_file_cached(path: Path, strict: bool = True) -> HardwareSpec:
    """A spec file, parsed once per version; ``strict`` for catalogue entries (real GPUs),
    not for a file named by path (see :func:`_spec_from_mapping`)."""
    path = path.resolve()
    st = path.stat()
    stamp = (st.st_mtime_ns, st.st_size)
    key = (path, strict)
    with _FILE_CACHE_LOCK:
        hit = _FILE_CACHE.get(key)
        if hit is not None and hit[0] == stamp:
            _FILE_CACHE.move_to_end(key)
            return hit[1]
    spec = _read_file(path, strict)
    with _FILE_CACHE_LOCK:
        _FILE_CACHE[key] = (stamp, spec)
        _FILE_CACHE.move_to_end(key)
        while len(_FILE_CACHE) > _FILE_CACHE_MAX:
            _FILE_CACHE.popitem(last=False)
    return spec


def _catalogue_files() -> dict[str, Path]:
    """key (file stem) -> file, the first directory holding a key winning."""
    files: dict[str, Path] = {}
    for d in catalogue_dirs():
        for p in sorted([*d.glob("*.yaml"), *d.glob("*.yml")]):
            files.setdefault(p.stem, p)
    return files


def _normalize(name: str) -> str:
    return re.sub(r"[-_\s]+", "", str(name)).lower()


def _names_of(spec: HardwareSpec) -> set[str]:
    return {_normalize(n) for n in (spec.key, spec.name, *spec.aliases)}


def list_specs() -> list[HardwareSpec]:
    """Every spec in the catalogue, sorted by key."""
    return [_load_file_cached(p) for _, p in sorted(_catalogue_files().items())]


def resolve_name(name: str) -> Path:
    """The catalogue file of a GPU name, key or alias (case-insensitive; '-', '_' and spaces
    ignored; a leading 'NVIDIA' optional, so ``torch.cuda.get_device_name()`` works)."""
    want = _normalize(name)
    stripped = want.removeprefix("nvidia")
    wants = {want, stripped, stripped.removeprefix("geforce")}
    files = _catalogue_files()
    for k, p in files.items():
        if _normalize(k) == want:
            return p
    hits: list[Path] = []
    for _, p in sorted(files.items()):
        if wants & _names_of(_load_file_cached(p)):
            hits.append(p)
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise SpecError(
            f"hw name {name!r} is ambiguous: it names {', '.join(str(p) for p in hits)}"
        )
    avail = []
    for k, p in sorted(files.items()):
        spec = _load_file_cached(p)
        avail.append(f"{k} ({', '.join(spec.aliases)})" if spec.aliases else k)
    where = ", ".join(str(d) for d in catalogue_dirs()) or "no catalogue directory found"
    raise SpecError(
        f"unknown hardware {name!r}; available: {'; '.join(avail) or 'none'} [in {where}]; "
        "a path to a YAML spec file, a dict or a HardwareSpec is also accepted"
    )


def load_spec(
    hw: str | os.PathLike | Mapping | HardwareSpec, *, strict: bool = False
) -> HardwareSpec:
    """A validated :class:`HardwareSpec` from a catalogue name or alias (``"H100"``), a path to
    a YAML/JSON spec file, a mapping in the same layout (base-unit or readable field names), or
    a HardwareSpec (returned as is). Raises :class:`SpecError` with a one-line reason.

    A catalogue entry describes a real GPU: its peaks must reach its datasheet figures and
    measurements. A file given by path or a mapping may describe a what-if GPU (a copied file
    with edited numbers): figures its peaks no longer reach are dropped, the others kept and
    checked, and the spec's ``notes`` say which (see also :meth:`HardwareSpec.scaled`);
    ``strict=True`` holds it to a real GPU's checks instead, as a catalogue entry."""
    if isinstance(hw, HardwareSpec):
        return hw
    if isinstance(hw, Mapping):
        return _spec_from_mapping(hw, _DICT, default_key=None, strict=strict)
    if isinstance(hw, (str, os.PathLike)):
        p = Path(hw).expanduser()
        looks_like_path = (
            isinstance(hw, os.PathLike)
            or p.suffix.lower() in (".yaml", ".yml", ".json")
            or os.sep in str(hw)
            or "/" in str(hw)
        )
        if p.is_file():
            return _load_file_cached(p, strict=strict)
        if looks_like_path:
            raise SpecError(f"hw spec {hw}: no such file")
        return _load_file_cached(resolve_name(str(hw)))
    raise SpecError(
        f"hw must be a GPU name or alias, a YAML path, a dict or a HardwareSpec; got "
        f"{type(hw).__name__}"
    )
