"""The memory tool's six commands for one user: path rules, the line model, edits, listings, the
content guard and quota, and one user's encrypted files. Pure rules here send no request; the files
reach S3 only through ``s3memory.storage``."""
