"""A local Hugging Face hub cache made from ``tests/fixtures/hf/<id>/config.json`` (the public
configs of the models the hub tests use), laid out as ``huggingface_hub`` writes one:
``models--ORG--NAME/refs/main`` names a snapshot, ``snapshots/<commit>/config.json`` holds the
file. ``HF_HUB_CACHE`` pointed at it, ``HF_HUB_OFFLINE=1``: what a user who fetched the configs
alone (``hf download ID config.json``) has."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf"
COMMIT = "0" * 40  # any snapshot name; refs/main points at it


def model_ids() -> list[str]:
    """The ids of the fixture configs (``gpt2``, ``facebook/opt-1.3b``, ...)."""
    return sorted(str(p.parent.relative_to(FIXTURES)) for p in FIXTURES.rglob("config.json"))


def make_cache(root: Path, ids: list[str] | None = None) -> Path:
    """A hub cache under ``root`` holding the fixture configs of ``ids`` (default: all)."""
    for model_id in ids or model_ids():
        repo = root / ("models--" + model_id.replace("/", "--"))
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(COMMIT)
        snapshot = repo / "snapshots" / COMMIT
        snapshot.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / model_id / "config.json", snapshot / "config.json")
    return root
