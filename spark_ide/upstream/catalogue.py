"""The model catalogue's entries (issue 34): the models a server offers, what each costs.

An entry names one model on one provider: where it is reached, which environment variable
holds the server's key for it (never the key itself), its context budget and output ceiling,
its edit dialect, whether it takes ``response.steer``, and its prices per million tokens. The
entries are read from ``models.toml`` (``SPARK_MODELS_FILE``); today's environment variables
still define a single default entry (docs/models.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from spark_ide.upstream.dialects import EditStyle
from spark_ide.upstream.profiles import Provider

_MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class Prices:
    """US dollars per million tokens: fresh input, cached input, output. An entry whose
    ``prices`` is None has no known price (its turns' cost is not counted)."""

    input: Decimal = Decimal(0)
    cached_input: Decimal = Decimal(0)
    output: Decimal = Decimal(0)

    def cost(self, *, input_tokens: int, cached_input_tokens: int, output_tokens: int) -> Decimal:
        """The cost of one request: ``input_tokens`` counts every input token, the cached
        ones included (as OpenAI's ``usage`` does), and those are charged at the cached price."""
        cached = min(max(cached_input_tokens, 0), max(input_tokens, 0))
        fresh = max(input_tokens, 0) - cached
        total = fresh * self.input + cached * self.cached_input + max(output_tokens, 0) * self.output
        return total / _MILLION


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """One model of the catalogue. ``key_env``: the environment variable holding the server's
    key for it (empty: none, as for the local model server)."""

    name: str
    provider: Provider
    base_url: str
    model: str
    key_env: str = ""
    context_tokens: int | None = None  # None: the server's SPARK_CONTEXT_TOKENS
    max_output_tokens: int | None = None  # None: the server's SPARK_MAX_OUTPUT_TOKENS
    edit_style: EditStyle | None = None  # None: the provider's and model's default
    steer: bool = False  # accepts `response.steer`
    prices: Prices | None = None  # None: the price is unknown
