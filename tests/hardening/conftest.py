"""The live-session fixtures of tests/pairing (a workspace, its session, its owner; the
rooms closed after each test), for the hardening tests that use a live room."""

from tests.pairing.conftest import live, rooms

__all__ = ["live", "rooms"]
