"""The live-session fixtures of the pairing tests (a real room, the scripted model server),
for the tests that drive turns through the stack and read what operators see of them."""

from tests.pairing.conftest import live, model_server, rooms

__all__ = ["live", "model_server", "rooms"]
