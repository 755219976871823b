"""The families of tests/test_library_families.py on the libraries' own models, where the
library is installed (each test skips without it): ultralytics' YOLO heads, segment-anything's
prompt encoder, transformers' wav2vec2, PyTorch Geometric's networks. Small sizes; the zoo
(``python -m solar.bench.zoo --library graphs,yolo,sam,audio``) runs them at full size."""

from __future__ import annotations

import os

import pytest
import torch
from eager_oracle import check

import solar
from solar.bench.zoo_families import FAMILIES, Family
from solar.frontend.torch import DataDependentOperatorError, trace_torch


def test_a_missing_library_is_one_line():
    family = Family("solar_no_such_library", "no-such-package", "", (), lambda name: None)
    assert family.missing() == (
        "solar_no_such_library is not installed (pip install no-such-package): skipped"
    )
    assert set(FAMILIES) == {"graphs", "yolo", "sam", "audio"}


def test_yolo_strides_are_read_from_the_model():
    """ultralytics builds on the CPU and keeps its strides (8, 16, 32) in ``Detect.stride``;
    ``make_anchors`` fills each level's stride column from it: three reads, known values."""
    pytest.importorskip("ultralytics")
    os.environ.setdefault("YOLO_OFFLINE", "1")
    from ultralytics.nn.tasks import DetectionModel

    model = DetectionModel("yolov8n.yaml", verbose=False).eval()
    trace = trace_torch(model, (torch.rand(1, 3, 128, 128),))
    fills = sorted(
        st.expr.value
        for k in trace.program.kernels
        if k.op == "aten.new_full.default"
        for st in k.statements
    )
    assert fills == [8.0, 16.0, 32.0]
    assert any(a.startswith("3 Python value(s) read from tensors") for a in trace.assumptions)


def test_segment_anything_prompt_encoder_executes_as_pytorch():
    """``point_embedding[labels == -1] = 0.0`` and its siblings: masked writes."""
    pytest.importorskip("segment_anything")
    from segment_anything.modeling import PromptEncoder

    torch.manual_seed(0)
    encoder = PromptEncoder(embed_dim=16, image_embedding_size=(8, 8), input_image_size=(64, 64),
                            mask_in_chans=4).eval()  # fmt: skip

    def points(pts, labels):
        return encoder(points=(pts, labels), boxes=None, masks=None)

    pts, labels = torch.rand(2, 4, 2) * 64, torch.tensor([[1, 0, -1, 1], [-1, -1, 0, 1]])
    check(points, pts, labels, observe=True, lifted=True)
    low = solar.bound(points, (pts, labels), "H100")  # 0 selected: valid for every label
    assert any("aten.index_put (boolean mask)" in a for a in low.assumptions)


def test_wav2vec2_executes_as_pytorch():
    """The weight-normalized positional convolution (``_weight_norm_interface``)."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.Wav2Vec2Config(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=4,
        num_conv_pos_embedding_groups=2,
    )  # fmt: skip
    model = transformers.Wav2Vec2Model(config).eval()
    trace = check(lambda w: model(w).last_hidden_state, torch.randn(1, 400), lifted=True)
    ops = [k.op for k in trace.program.kernels]
    assert "aten._weight_norm_interface.default" in ops


def test_graph_networks_execute_as_pytorch_and_graph_unet_stops_on_its_sparse_adjacency():
    pyg = pytest.importorskip("torch_geometric.nn")
    torch.manual_seed(0)
    x, edges = torch.randn(12, 5), torch.randint(0, 12, (2, 30))
    model = pyg.GCN(5, 8, 2, 3).eval()  # removes self loops: x[mask], a size of the graph
    check(model, x, edges, lifted=True, observe=True)
    unet = pyg.GraphUNet(5, 8, 3, depth=1).eval()
    with pytest.raises(DataDependentOperatorError, match="_local_scalar_dense"):
        trace_torch(unet, (x, edges))
