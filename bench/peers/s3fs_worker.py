"""Runs the s3fs peer for the bench, in the s3fs virtualenv, one JSON message per line.

The bench starts this process once per endpoint and sends it messages on standard input:

- ``{"op": "seed", "user": ..., "files": {path: text}}``: store a user's starting files (untimed).
- ``{"op": "session", "user": ..., "commands": [tool inputs]}``: run them one by one, each timed
  and its requests counted (a botocore ``request-created`` hook on s3fs's aiobotocore client).
- ``{"op": "quit"}``.

Each answer is one JSON line on standard output. Settings come from the environment:
``BENCH_ENDPOINT_URL``, ``BENCH_BUCKET``, ``BENCH_KEY_HEX`` (the AES-256 key).

    python -m bench.peers.s3fs_worker
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def _filesystem() -> Any:
    import s3fs

    return s3fs.S3FileSystem(
        key=os.environ.get("AWS_ACCESS_KEY_ID", "bench"),
        secret=os.environ.get("AWS_SECRET_ACCESS_KEY", "bench-secret"),
        endpoint_url=os.environ["BENCH_ENDPOINT_URL"],
        client_kwargs={"region_name": "us-east-1"},
        skip_instance_cache=True,
    )


def main() -> int:
    from bench.metrics import RequestCounter, quiet_gc
    from bench.peers.s3fs_memory import S3fsMemoryTool, ToolError

    fs = _filesystem()
    fs.connect()
    counter = RequestCounter(fs.s3)
    bucket = os.environ["BENCH_BUCKET"]
    key = bytes.fromhex(os.environ["BENCH_KEY_HEX"])
    versions = {"s3fs": __import__("s3fs").__version__, "aiobotocore": __import__("aiobotocore").__version__}
    print(json.dumps({"ready": True, "versions": versions}), flush=True)
    for line in sys.stdin:
        message = json.loads(line)
        op = message.get("op")
        if op == "quit":
            break
        tool = S3fsMemoryTool(fs, f"{bucket}/peers/{message.get('user', 'nobody')}", key)
        if op == "seed":
            tool.seed(message["files"])
            fs.invalidate_cache()
            print(json.dumps({"ok": True}), flush=True)
            continue
        if op == "session":
            fs.invalidate_cache()  # a new conversation: nothing cached from before
            results = []
            for command in message["commands"]:
                ok = True
                with counter.window() as seen, quiet_gc():
                    started = time.perf_counter()
                    try:
                        answer = tool.call(command)
                    except ToolError as error:
                        ok, answer = False, str(error)
                    seconds = time.perf_counter() - started
                results.append({"seconds": seconds, "requests": dict(seen), "ok": ok, "head": answer[:120]})
            print(json.dumps({"results": results}), flush=True)
            continue
        print(json.dumps({"error": f"unknown op {op!r}"}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
