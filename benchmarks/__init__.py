"""Spark IDE's benchmarks, one module (or package) per measured part, each with
``main(argv) -> figures``: run them with ``manage.py spark_bench <part> [flags]``.

Kept out of the installed ``spark_ide`` package: nothing in the product imports them. Tests
may import them (``tests/benchmarks`` runs each one at tiny sizes).
"""
