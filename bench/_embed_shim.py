"""A local OpenAI-compatible embeddings endpoint for the peers benchmark (not a benchmark itself).

    python bench/_embed_shim.py [--backend onnx|torch] [--port 0]

Serves `POST /v1/embeddings` (input: a string or a list of strings; `encoding_format` float or
base64) and `GET /v1/models` on 127.0.0.1 with all-MiniLM-L6-v2 through Kit's own embedders, so a
peer that needs an embedding API embeds with the same model (and, by default, the same engine) as
Kit: the benchmark then compares the pipelines, not the model. Prints `PORT <n>` once listening.
Its CPU time is the peer's embedding cost: bench/peers.py reads it from /proc and adds it.

`GET /v1/stats` says what was asked of it so far (requests, texts, tokens after truncation to the
model's 256, texts truncated, encoding formats), so the bench can state what each peer embedded.
The model loads (and warms up) before `PORT` is printed: a peer never pays for the model load,
which Kit's own processes do.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

MODEL_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "text-embedding-3-small")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="onnx", choices=("onnx", "numpy", "torch"))
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from kit.memory.embeddings import Embedders

    embedder = Embedders().get({"backend": args.backend})
    if embedder is None:
        print(f"the {args.backend} backend cannot run all-MiniLM-L6-v2 here", file=sys.stderr)
        return 1
    embedder.encode(["warm up"])
    tokens = getattr(getattr(embedder, "session", None), "tokens", None)
    lock = threading.Lock()  # one encode at a time: the model already uses the cores
    stats = {"requests": 0, "texts": 0, "tokens": 0, "truncated": 0, "formats": {}}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, status: int, body: dict) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/stats"):
                with lock:
                    self._send(200, json.loads(json.dumps(stats)))
            elif self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "kit"}
                                                            for n in MODEL_NAMES]})
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, {"error": {"message": "invalid JSON"}})
                return
            if not self.path.rstrip("/").endswith("/embeddings"):
                self._send(404, {"error": {"message": "not found"}})
                return
            texts = request.get("input", [])
            if isinstance(texts, str):
                texts = [texts]
            if texts and not isinstance(texts[0], str):
                self._send(400, {"error": {"message": "token-id input is not supported"}})
                return
            with lock:
                vectors = np.asarray(embedder.encode(list(texts)), dtype=np.float32)
                # the usage figure re-tokenises (cheap next to the model: ~1 % of the encode here)
                encoded = tokens.encode(texts) if tokens is not None else None
                used = sum(len(e.ids) for e in encoded) if encoded is not None else sum(len(t.split()) for t in texts)
                stats["requests"] += 1
                stats["texts"] += len(texts)
                stats["tokens"] += used
                stats["truncated"] += sum(1 for e in encoded if e.overflowing) if encoded is not None else 0
                fmt = str(request.get("encoding_format") or "float")
                stats["formats"][fmt] = stats["formats"].get(fmt, 0) + 1
            b64 = request.get("encoding_format") == "base64"
            data = [{"object": "embedding", "index": i,
                     "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode() if b64 else v.tolist()}
                    for i, v in enumerate(vectors)]
            self._send(200, {"object": "list", "data": data, "model": request.get("model") or MODEL_NAMES[0],
                             "usage": {"prompt_tokens": used, "total_tokens": used}})

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
