"""Peers measured on the same workload as s3memory (see bench/README.md)."""
