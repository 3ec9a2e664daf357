"""One user's memory below the commands (which ``s3memory.memory`` runs): path rules, the parsed
commands, the line model and edits, listings, the content guard, quota, and one user's encrypted
files, their placement, moves, directory jobs and last-used record. Pure rules here send no
request; the files reach S3 only through ``s3memory.storage``."""
