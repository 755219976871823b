"""One training step of a small GPT in plain JAX with optax: ``jax.value_and_grad`` of the
loss, ``optax.adamw``, ``optax.apply_updates``. Twin of examples/jax_twin_train_gpt_torch.py
(the same model, parameter layout and optimizer in PyTorch): both get the same fused bound.

2 blocks of width 512 (8 heads, causal attention written out as matmul-softmax-matmul,
tanh-GELU MLP), LayerNorm, LM head tied to the token embedding, vocabulary 4096, batch
8 x 512 tokens, bf16 parameters and optimizer state, the loss in float32.

A JAX training problem file (docs/training.md): ``Model.apply(params, *batch)`` returns the
loss, ``Model().params`` are ShapeDtypeStructs (nothing is allocated), ``get_optimizer()`` the
optax transformation, ``init_params(key)`` real parameters for a GPU run; solar analyses
``(params, opt_state, *batch) -> (params, opt_state, loss)``.
"""

import jax
import jax.numpy as jnp
import optax

REQUIRES = ["jax", "optax"]
BATCH, TOKENS, VOCAB, WIDTH, HEADS, LAYERS = 8, 512, 4096, 512, 8, 2
DTYPE = jnp.bfloat16


def layer_norm(x, w, b):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * w + b


def attention(x, p, heads):
    b, t, c = x.shape
    qkv = x @ p["attn_w"].T + p["attn_b"]
    q, k, v = (
        z.reshape(b, t, heads, c // heads).transpose(0, 2, 1, 3) for z in jnp.split(qkv, 3, -1)
    )
    scores = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / (c // heads) ** 0.5)
    causal = jnp.tril(jnp.ones((t, t), dtype=bool))
    probs = jax.nn.softmax(jnp.where(causal, scores, -jnp.inf), axis=-1)
    y = (probs @ v).transpose(0, 2, 1, 3).reshape(b, t, c)
    return y @ p["proj_w"].T + p["proj_b"]


def forward(params, idx, targets):
    x = params["wte"][idx] + params["wpe"][: idx.shape[1]]
    for p in params["blocks"]:
        x = x + attention(layer_norm(x, p["ln1_w"], p["ln1_b"]), p, HEADS)
        h = jax.nn.gelu(layer_norm(x, p["ln2_w"], p["ln2_b"]) @ p["fc_w"].T + p["fc_b"])
        x = x + h @ p["fc2_w"].T + p["fc2_b"]
    logits = layer_norm(x, params["lnf_w"], params["lnf_b"]) @ params["wte"].T
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return -jnp.take_along_axis(logp, targets[..., None], axis=-1).mean()


def get_params(layers=LAYERS, width=WIDTH, vocab=VOCAB, context=TOKENS):
    def sds(*shape):
        return jax.ShapeDtypeStruct(shape, DTYPE)

    def block():
        return {
            "ln1_w": sds(width), "ln1_b": sds(width),
            "attn_w": sds(3 * width, width), "attn_b": sds(3 * width),
            "proj_w": sds(width, width), "proj_b": sds(width),
            "ln2_w": sds(width), "ln2_b": sds(width),
            "fc_w": sds(4 * width, width), "fc_b": sds(4 * width),
            "fc2_w": sds(width, 4 * width), "fc2_b": sds(width),
        }  # fmt: skip

    return {
        "wte": sds(vocab, width),
        "wpe": sds(context, width),
        "blocks": [block() for _ in range(layers)],
        "lnf_w": sds(width),
        "lnf_b": sds(width),
    }


def init_params(key, layers=LAYERS, width=WIDTH, vocab=VOCAB, context=TOKENS):
    """Real parameters at GPT-2's initialisation (normal(0, 0.02) matrices and embeddings,
    LayerNorm weights 1, biases 0), for validating the step on a GPU."""
    shapes = get_params(layers, width, vocab, context)
    leaves, tree = jax.tree_util.tree_flatten_with_path(shapes)
    keys = jax.random.split(key, len(leaves))

    def init(path, s, k):
        name = jax.tree_util.keystr(path)
        if s.ndim == 2:
            return (0.02 * jax.random.normal(k, s.shape, jnp.float32)).astype(s.dtype)
        return jnp.ones(s.shape, s.dtype) if name.endswith("_w']") else jnp.zeros(s.shape, s.dtype)

    return jax.tree_util.tree_unflatten(tree, [init(p, s, k) for (p, s), k in zip(leaves, keys)])


def get_optimizer():
    return optax.adamw(3e-4, b1=0.9, b2=0.95, eps=1e-8, weight_decay=0.01)


class Model:
    """The parameters and the loss, as the corpus expects of a problem file."""

    def __init__(self, layers=LAYERS, width=WIDTH, vocab=VOCAB, context=TOKENS):
        self.params = get_params(layers, width, vocab, context)

    def apply(self, params, idx, targets):
        return forward(params, idx, targets)


def get_inputs():
    tokens = jax.ShapeDtypeStruct((BATCH, TOKENS), jnp.int32)
    return [tokens, tokens]


def get_init_inputs():
    return [LAYERS, WIDTH, VOCAB, TOKENS]
