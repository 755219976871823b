"""Whether the Hugging Face Hub can be reached now, asked once and quickly.

Without a network, ``hf_hub_download`` retries for about half a minute (printing a line per
retry) before it fails; a model by name whose config is in no folder and no cache should fail
at once instead, in one line. So before fetching, one TCP connection is opened to the Hub's
host (``HF_ENDPOINT``, default ``https://huggingface.co``), or to the HTTPS proxy the
environment names, with a short timeout: where it does not open, the fetch would not succeed.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

#: seconds to wait for the connection (a name lookup and a TCP handshake)
CONNECT_TIMEOUT_S = 3.0


def hub_address() -> tuple[str, int]:
    """``(host, port)`` a fetch from the Hub connects to first: the HTTPS proxy of the
    environment when one is set, else the Hub endpoint's own."""
    proxy = next(
        (
            os.environ[k]
            for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
            if os.environ.get(k)
        ),
        None,
    )
    url = urlsplit(proxy or os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    default = 443 if url.scheme in ("https", "") else 80
    return url.hostname or "huggingface.co", url.port or default


def hub_unreachable(timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why the Hub cannot be reached now (``"huggingface.co:443: Name or service not
    known"``), or None when a connection opens within ``timeout`` seconds."""
    host, port = hub_address()
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        return f"{host}:{port}: {reason}"
    return None
