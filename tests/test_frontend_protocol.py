"""One frontend protocol (solar/frontend/protocol.py, solar/frontend/frameworks.py): both
frontends answer the same frozen Trace, and one table tells a program's framework by the types
of its model and inputs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from solar.frontend.frameworks import FRONTENDS, frontend_of  # noqa: E402
from solar.frontend.jax.trace import FUSION_NOTE, JaxFeed  # noqa: E402
from solar.frontend.protocol import Trace  # noqa: E402
from solar.frontend.torch.trace import TorchFeed  # noqa: E402
from solar.interp.torch.execute import execute  # noqa: E402

W = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
X = np.arange(8, dtype=np.float32).reshape(2, 4) / 10


def test_the_table_names_each_frontend_once():
    assert {n: f.label for n, f in FRONTENDS.items()} == {"torch": "PyTorch", "jax": "JAX"}


@pytest.mark.parametrize(
    "model,inputs,name",
    [
        (torch.nn.Linear(4, 3), (torch.zeros(2, 4),), "torch"),
        (lambda x: x, (torch.zeros(2),), "torch"),
        (lambda x: x, ({"x": [jnp.zeros(2)]},), "jax"),
        (lambda x: x, (jax.ShapeDtypeStruct((2,), jnp.float32),), "jax"),
    ],
)
def test_the_framework_is_told_by_the_types(model, inputs, name):
    assert frontend_of(model, inputs).name == name


def test_no_or_both_frameworks_name_the_keyword():
    with pytest.raises(TypeError, match="no PyTorch or JAX value.*framework='torch'"):
        frontend_of(lambda x: x, (np.zeros(2),))
    with pytest.raises(TypeError, match="both PyTorch and JAX values"):
        frontend_of(lambda x, y: x, (torch.zeros(2), jnp.zeros(2)))
    with pytest.raises(ValueError, match="framework must be one of torch, jax, got 'tf'"):
        frontend_of(lambda x: x, (), framework="tf")


def test_both_frontends_answer_one_frozen_trace():
    """``x @ w`` (2 x 4 by 4 x 3) traced by each frontend: the same type, the same IR output
    values (x @ w computed by hand below), each with its own feed."""
    want = torch.from_numpy(X @ W)
    traces = {
        "torch": FRONTENDS["torch"].trace(
            lambda x, w: x @ w, (torch.from_numpy(X), torch.from_numpy(W))
        ),
        "jax": FRONTENDS["jax"].trace(lambda x, w: x @ w, (jnp.asarray(X), jnp.asarray(W))),
    }
    for name, t in traces.items():
        assert type(t) is Trace and t.framework == name
        assert isinstance(t.output_names, tuple) and isinstance(t.assumptions, tuple)
        with pytest.raises(dataclasses.FrozenInstanceError):
            t.program = None  # type: ignore[misc]
    assert isinstance(traces["torch"].feed, TorchFeed)
    assert isinstance(traces["jax"].feed, JaxFeed) and traces["jax"].feed.timer == "host"
    assert traces["jax"].assumptions == (FUSION_NOTE,)
    args = {
        "torch": (torch.from_numpy(X), torch.from_numpy(W)),
        "jax": (jnp.asarray(X), jnp.asarray(W)),
    }
    for name, t in traces.items():
        fn = lambda x, w: x @ w  # noqa: E731
        (out,) = t.output_names
        got = execute(t.program, t.values(fn, args[name]))[out]
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
        (ref,) = t.reference(fn, args[name])
        torch.testing.assert_close(ref, want, rtol=1e-6, atol=1e-6)
