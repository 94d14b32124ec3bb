"""`manage.py spark_bench` where the benchmarks are not there (an installed product: the
top-level benchmarks/ is not shipped) says so plainly instead of failing on an import."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError


def test_without_the_benchmarks_package_it_says_where_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    found = importlib.util.find_spec

    def not_shipped(name: str, *args: Any) -> Any:
        return None if name == "benchmarks" else found(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", not_shipped)
    with pytest.raises(CommandError, match=r"not installed with Spark IDE: .* benchmarks/ directory of a checkout"):
        call_command("spark_bench", "editing")
