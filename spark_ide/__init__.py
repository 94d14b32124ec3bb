"""Spark IDE: a web-based live pair-programming IDE.

Kept empty on purpose: the pure cores (editing, upstream, live, modelserver) live under this
package and must import without Django or Celery.
"""
