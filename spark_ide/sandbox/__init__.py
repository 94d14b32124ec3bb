"""Code runs: a student's file or tests run in a sandbox, streamed into the room (docs/sandbox.md).

``core`` is the sandbox itself (no Django: it runs from a CLI as it is); ``tasks`` is the
Celery task that runs one run and streams it through the channel layer; ``control`` carries
stdin and Stop to the process that runs it.
"""
