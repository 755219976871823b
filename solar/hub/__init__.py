"""Models by name: a Hugging Face model built from its ``config.json`` alone, on the meta device.

    b = solar.bound_hub("gpt2", batch=8, seq=1024, hw="H100")
    solar bound hf:gpt2 --batch 8 --seq 1024          # the same on the command line

No weights are downloaded or allocated: the config is read, the model class chosen from its
``architectures`` and the model built with ``model_class._from_config(config)`` under
``torch.device("meta")`` (:mod:`solar.hub.models`).

Where the config comes from, in order:

1. a folder holding ``config.json`` (``hf:path/to/folder``; a folder of that name wins over a
   hub id of the same spelling, as in ``from_pretrained``);
2. the local Hugging Face cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
   ``~/.cache/huggingface/hub``), read with ``huggingface_hub.try_to_load_from_cache``;
3. unless offline (``HF_HUB_OFFLINE=1``), ``config.json`` alone fetched from the Hub
   (``hf_hub_download(id, "config.json")``: a few kilobytes, never a weight file).

When none has it, a one-line :class:`HubError` names the file, where it looked and how to fetch
just the config (``hf download ID config.json``).

The dtype is ``from_pretrained``'s default (``dtype="auto"``): the config's ``dtype`` /
``torch_dtype`` entry; a config without one is float32 (what the checkpoints of such configs
store; without their weights solar cannot look). An explicit ``dtype`` wins.

Problem files whose ``Model.__init__`` calls ``from_pretrained`` (benchmark suites'
model-level problems) are built the same way while :mod:`solar.problem` loads them
(:mod:`solar.hub.pretrained`). The programs bounded (forward, prefill, decode, training step)
are :mod:`solar.hub.programs`'s.
"""

from solar.hub.models import HubError, find_config, hub_model
from solar.hub.programs import PHASES, bound_hub, hub_program, lift_hub, plan_hub

__all__ = [
    "PHASES",
    "HubError",
    "bound_hub",
    "find_config",
    "hub_model",
    "hub_program",
    "lift_hub",
    "plan_hub",
]
