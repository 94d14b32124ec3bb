"""The pairing relay benchmark: the IDE against a bare relay on the real stack (see ``run``)."""

from benchmarks.pairing.run import QUICK, main

__all__ = ["QUICK", "main"]
