"""Spark IDE's local model server: the OpenAI Responses WebSocket protocol over a local
engine (llama-cpp-python with the bundled SmolLM2, or the deterministic scripted engine).

No Django here; ``manage.py modelserver`` and ``python -m spark_ide.modelserver`` both call
:func:`spark_ide.modelserver.cli.main`.
"""
