"""s3memory's benchmark: request counts and wall time per command, scaling, parallel batches,
cold start, and peers on the same workload. Run it with ``python -m bench`` (see bench/README.md).

Importing this package imports nothing heavy: the s3fs peer's worker runs ``bench.peers`` in
another virtualenv, where neither s3memory nor boto3 is installed.
"""
