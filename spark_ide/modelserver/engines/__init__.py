"""Engines: ``llama`` (the real local model, the default) and ``scripted`` (deterministic)."""
