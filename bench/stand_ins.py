"""bench/deploy_cost.py's stand-ins for what does not run here, served over HTTP from threads of their own.

deploy_cost prices a function's CPU time as the handler thread's (``time.thread_time``). A stand-in answered
inside that thread (a vector computed, a k-NN search scored in Python) would be billed to the function, and a
request answered before it is sent would skip the client's own work (signing, the HTTP exchange, parsing the
answer). Served over HTTP from another thread, the function does all it does against AWS, and none of the
stand-in's work counts:

- ``TitanServer`` (here): Bedrock's ``InvokeModel`` for Titan Text Embeddings V2 (``POST /model/{id}/invoke``,
  ``{"inputText", "dimensions"}`` -> ``{"embedding", "inputTextTokenCount"}``), a deterministic unit vector and
  AWS's documented 4.7 characters per token;
- the rehearsal's ``OpenSearchStandIn`` (tests/support/rehearsal_stage.py): osmem-server, plus the k-NN
  searches osmem lacks, scored by the documented faiss formula.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from cost_meter import TITAN_CHARS_PER_TOKEN, deterministic_vector
from rehearsal_stage import send_json, serve_http


class TitanServer:
    """Titan Text Embeddings V2's InvokeModel; ``on_call(tokens)`` for each call, before it is answered."""

    def __init__(self, on_call: Callable[[int], None]) -> None:
        self._on_call = on_call
        self._server, self.url = serve_http(self._answer, "POST")

    def _answer(self, request: BaseHTTPRequestHandler) -> None:
        raw = request.rfile.read(int(request.headers.get("Content-Length") or 0))
        if re.fullmatch(r"/model/[^/]+/invoke", request.path) is None:
            send_json(request, 404, "ResourceNotFoundException", {"message": f"no such route: {request.path}"})
            return
        body = json.loads(raw)
        text = body["inputText"]
        tokens = max(1, math.ceil(len(text) / TITAN_CHARS_PER_TOKEN))
        self._on_call(tokens)
        vector = deterministic_vector(text, int(body.get("dimensions", 1024)))
        send_json(request, 200, None, {"embedding": vector, "inputTextTokenCount": tokens})

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
