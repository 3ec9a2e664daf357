"""The S3 edge: every request to a bucket and its errors (``bucket``), AWS clients, the shared
worker pool, what the server enforces, and stores inside stores. No content rule lives here."""
