"""Runs the s3fs peer for the bench, in the s3fs virtualenv, one JSON message per line.

The bench starts this process once per endpoint and sends it messages on standard input:

- ``{"op": "seed", "user": ..., "files": {path: text}}``: store a user's starting files (untimed).
- ``{"op": "session", "user": ..., "commands": [tool inputs]}``: run them one by one, each timed,
  its requests counted (a botocore ``request-created`` hook on s3fs's aiobotocore client) and this
  process's CPU time taken.
- ``{"op": "quit"}``.

Each answer is one JSON line on standard output. Settings come from the environment:
``BENCH_ENDPOINT_URL``, ``BENCH_BUCKET``, ``BENCH_KEY_HEX`` (the AES-256 key), and
``BENCH_LATENCY_MS``: milliseconds to wait before every HTTP attempt, as the bench's own clients
wait on an endpoint with client-side latency (``servers.Backend.client_latency_ms``), in an async
``before-send`` handler that aiobotocore awaits, so the event loop's other requests go on meanwhile.

    python -m bench.peers.s3fs_worker
"""

from __future__ import annotations

import asyncio
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


def _add_latency(fs: Any, seconds: float) -> None:
    """Every HTTP attempt of ``fs``'s client waits ``seconds`` first (without blocking the loop)."""

    async def wait(**_: Any) -> None:
        await asyncio.sleep(seconds)

    fs.s3.meta.events.register("before-send.s3", wait)


def main() -> int:
    from bench.metrics import RequestCounter, quiet_gc
    from bench.peers.s3fs_memory import S3fsMemoryTool, ToolError

    fs = _filesystem()
    fs.connect()
    latency_ms = float(os.environ.get("BENCH_LATENCY_MS", "0"))
    if latency_ms:
        _add_latency(fs, latency_ms / 1000)
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
                    cpu = time.process_time()
                    started = time.perf_counter()
                    try:
                        answer = tool.call(command)
                    except ToolError as error:
                        ok, answer = False, str(error)
                    seconds = time.perf_counter() - started
                    cpu = time.process_time() - cpu
                results.append(
                    {"seconds": seconds, "cpu": cpu, "requests": dict(seen), "ok": ok, "head": answer[:120]}
                )
            print(json.dumps({"results": results}), flush=True)
            continue
        print(json.dumps({"error": f"unknown op {op!r}"}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
