"""The pairing relay benchmark: the IDE against a bare relay on the real stack (see ``run``)."""

from benchmarks.pairing.run import main

__all__ = ["main"]
