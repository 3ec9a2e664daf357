"""The S3 edge: every request to a bucket (``bucket``) and what its failure says (``diagnosis``), the
shared worker pool (``concurrency``), the conditions each format needs and the gate (``conditions``),
what the server enforces (``server_checks``), and stores inside stores (``nesting``). No content rule
lives here; the AWS clients are built in ``s3memory.clients``."""
