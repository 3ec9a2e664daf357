"""The ``s3memory`` command: the parser and entry point (``main``), each operator command declared
once (``commands``), and how a command runs and prints its report (``console``)."""
