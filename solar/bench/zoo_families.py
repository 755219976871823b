"""The model zoo's families from libraries beyond the four big ones: graph networks (PyTorch
Geometric, a sparse adjacency included), YOLO-family detection (ultralytics), Segment Anything
(segment-anything and transformers' ``SamModel``) and audio encoders (transformers).

Each family is one table row: the import it needs (a missing library skips the family with one
line), the sizes it is called at, its model names and one builder. Models are built as the
library's users build them: from the library's own config or yaml, without weights; on the
``meta`` device in bf16 where the constructor runs there, on the CPU otherwise (ultralytics
computes its strides with a forward pass while building), then cast to bf16. Graph networks
are built on the CPU and bounded with ``observe=True``: the edges a graph keeps are its data.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from solar.bench.zoo_case import Case, main_tensor, on_meta_or_cpu

GRAPH_NODES, GRAPH_EDGES, GRAPH_FEATURES, GRAPH_CLASSES = 2708, 10556, 1433, 7  # Cora's sizes
AUDIO_SAMPLES = 16000  # one second at 16 kHz
YOLO_SIDE = 640
SAM_SIDE = 1024


@dataclass(frozen=True)
class Family:
    """One family of the zoo: the module it imports, the pip package that provides it, the
    sizes it is called at, its model names and the builder of one model."""

    module: str
    package: str
    sizes: str
    names: tuple[str, ...]
    build: Callable[[str], Case]

    def missing(self) -> str | None:
        """One line when the family's library is not installed, else None."""
        try:
            if importlib.util.find_spec(self.module) is not None:
                return None
        except ModuleNotFoundError:  # a finder that refuses it: not installed either
            pass
        return f"{self.module} is not installed (pip install {self.package}): skipped"


def _mse(out: object) -> torch.Tensor:
    x = main_tensor(out).float()
    return F.mse_loss(x, torch.zeros_like(x))


def _case(model: nn.Module, inputs: tuple, call: str, notes: list[str], **kw: object) -> Case:
    return Case(model, inputs, _mse, call=call, notes=notes, **kw)


# -- graph networks (PyTorch Geometric) ----------------------------------------------------
GRAPHS = ("GCN", "GraphSAGE", "GIN", "GAT", "EdgeCNN", "GraphUNet")


def _graph(name: str) -> Case:
    import torch_geometric.nn as gnn

    notes = [
        "built on the CPU and bounded with observe=True: which edges survive the self-loop "
        "removal and how many a node receives are sizes of this graph (their minimum, no edge, "
        "would bound a graph without edges)"
    ]
    if name == "GraphUNet":  # pools by building and coalescing a sparse adjacency (A @ A)
        model = gnn.GraphUNet(GRAPH_FEATURES, 64, GRAPH_CLASSES, 2)
        notes.append(
            "GraphUNet(depth=2): each pooling squares the sparse adjacency (CSR @ CSR), traced "
            "as its stored elements; the products and the entries they make are this graph's"
        )
    else:
        model = getattr(gnn, name)(GRAPH_FEATURES, 64, 2, GRAPH_CLASSES)
    dtype = torch.bfloat16
    model = model.to(dtype)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(GRAPH_NODES, GRAPH_FEATURES, generator=gen, dtype=dtype)
    edges = torch.randint(0, GRAPH_NODES, (2, GRAPH_EDGES), generator=gen)
    call = f"model(x {GRAPH_NODES} x {GRAPH_FEATURES}, edge_index 2 x {GRAPH_EDGES})"
    return _case(model.eval(), (x, edges), call, notes, observe=True)


# -- YOLO-family detection (ultralytics) ---------------------------------------------------
YOLOS = tuple(
    f"{v}{task}.yaml" for v in ("yolov8n", "yolo11n") for task in ("", "-seg", "-pose", "-obb")
) + ("yolov10n.yaml", "yolo12n.yaml", "yolo26n.yaml")


def _yolo(name: str) -> Case:
    os.environ.setdefault("YOLO_OFFLINE", "1")  # no update checks: the zoo runs offline
    from ultralytics.nn import tasks

    task = next((t for t in ("seg", "pose", "obb") if f"-{t}." in name), "detect")
    cls = {
        "detect": tasks.DetectionModel,
        "seg": tasks.SegmentationModel,
        "pose": tasks.PoseModel,
        "obb": tasks.OBBModel,
    }[task]
    model = cls(name, verbose=False).to(torch.bfloat16).eval()
    notes = ["built on the CPU from the library's yaml (its strides come from a forward pass)"]
    x = torch.rand(1, 3, YOLO_SIDE, YOLO_SIDE, dtype=torch.bfloat16)
    return _case(model, (x,), f"model(1 x 3 x {YOLO_SIDE} x {YOLO_SIDE})", notes)


# -- Segment Anything ----------------------------------------------------------------------
SAMS = ("prompt_encoder", "mask_decoder", "sam_vit_b", "transformers_SamModel")


class _Prompted(nn.Module):
    """segment-anything's documented calls: the prompt encoder on points, the mask decoder
    on an image embedding and the encoded prompt, or the whole model on one image."""

    def __init__(self, sam: nn.Module, part: str) -> None:
        super().__init__()
        self.sam, self.part = sam, part

    def forward(self, points: torch.Tensor, labels: torch.Tensor, image: torch.Tensor):
        if self.part == "sam_vit_b":
            size = tuple(image.shape[-2:])
            batch = [{"image": image, "original_size": size, "point_coords": points,
                      "point_labels": labels}]  # fmt: skip
            return self.sam(batch, multimask_output=True)[0]["low_res_logits"]
        sparse, dense = self.sam.prompt_encoder(points=(points, labels), boxes=None, masks=None)
        if self.part == "prompt_encoder":
            return sparse, dense
        return self.sam.mask_decoder(
            image_embeddings=image,
            image_pe=self.sam.prompt_encoder.get_dense_pe(),
            sparse_prompt_embeddings=sparse,
            dense_prompt_embeddings=dense,
            multimask_output=True,
        )


def _sam(name: str) -> Case:
    notes: list[str] = []
    points = torch.rand(1, 3, 2, dtype=torch.bfloat16) * SAM_SIDE
    labels = torch.tensor([[1, 0, -1]])  # a foreground, a background and a padding point
    if name == "transformers_SamModel":
        from transformers import SamConfig, SamModel

        model = on_meta_or_cpu(lambda: SamModel(SamConfig()), notes).eval()
        pixels = torch.rand(1, 3, SAM_SIDE, SAM_SIDE, dtype=torch.bfloat16)
        kwargs = {"pixel_values": pixels, "input_points": points[None]}
        kwargs["input_labels"] = labels[None]
        call = f"SamModel(SamConfig())(pixel_values 1x3x{SAM_SIDE}x{SAM_SIDE}, 3 points)"
        return _case(model, (), call, notes, kwargs=kwargs)
    from segment_anything import sam_model_registry

    sam = on_meta_or_cpu(lambda: sam_model_registry["vit_b"](), notes).float()
    notes.append(
        "float32, as segment-anything runs: its positional encoding makes float32 coordinates, "
        "which a bf16 mask decoder refuses (eagerly too)"
    )
    points = points.float()
    if name == "sam_vit_b":
        image = torch.rand(3, SAM_SIDE, SAM_SIDE)
        call = f"sam([image 3x{SAM_SIDE}x{SAM_SIDE}, 3 points])"
    else:
        image = torch.rand(1, 256, 64, 64)
        call = f"{name}(3 points" + (", image embedding 1x256x64x64)" if "mask" in name else ")")
    return _case(_Prompted(sam, name).eval(), (points, labels, image), call, notes)


# -- audio encoders (transformers) ---------------------------------------------------------
AUDIO = (
    "Wav2Vec2", "WavLM", "Hubert", "Data2VecAudio", "SEW", "SEWD", "UniSpeech", "UniSpeechSat",
    "Wav2Vec2Conformer",
)  # fmt: skip


def _audio(name: str) -> Case:
    import transformers

    config = getattr(transformers, f"{name}Config")()
    notes: list[str] = []
    model = on_meta_or_cpu(lambda: getattr(transformers, f"{name}Model")(config), notes).eval()
    wave = torch.rand(1, AUDIO_SAMPLES, dtype=torch.bfloat16)
    return _case(model, (wave,), f"{name}Model({name}Config())(1 x {AUDIO_SAMPLES} samples)", notes)


FAMILIES: dict[str, Family] = {
    "graphs": Family(
        "torch_geometric",
        "torch-geometric",
        f"PyTorch Geometric's models (2 layers, 64 hidden) on a random graph of Cora's sizes: "
        f"{GRAPH_NODES} nodes x {GRAPH_FEATURES} features, {GRAPH_EDGES} edges, "
        f"{GRAPH_CLASSES} classes; observe=True (the graph's own edge counts); GraphUNet "
        "coalesces a sparse adjacency",
        GRAPHS,
        _graph,
    ),
    "yolo": Family(
        "ultralytics",
        "ultralytics",
        f"ultralytics' own yaml, built on the CPU, then bf16; 1 x 3 x {YOLO_SIDE} x {YOLO_SIDE}",
        YOLOS,
        _yolo,
    ),
    "sam": Family(
        "segment_anything",
        "segment-anything",
        f"segment-anything's vit_b in float32 (prompt encoder, mask decoder, whole model) and "
        f"transformers' SamModel(SamConfig()); images {SAM_SIDE} x {SAM_SIDE}, 3 points "
        "(one a padding point, label -1)",
        SAMS,
        _sam,
    ),
    "audio": Family(
        "transformers",
        "transformers",
        f"transformers' audio encoders, default configs; 1 x {AUDIO_SAMPLES} samples (1 s)",
        AUDIO,
        _audio,
    ),
}
