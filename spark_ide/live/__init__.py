"""The live room engine: one room per workspace (document, seq, replay, fan-out), the Pilot
that runs the model's turns, prompt building and the typed session events. No Django:
persistence and settings are injected (docs/architecture.md).
"""
