"""``s3memory sync``: a folder kept the same as a user's ``/memories``, both ways (``docs/sync.md``).

``DIR/notes.md`` is ``/memories/notes.md``. Each round lists the memory once, scans the folder, and
decides per path against the state the last round left (``plan``, pure); every write on either
side is conditional on what that state saw, and the state is kept after each file (``state``), so a
round killed half-way is finished by the next. The folder's side is ``folder``; what a round did is
``report``.
"""
