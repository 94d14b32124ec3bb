"""The model catalogue's entries (issue 34): the models a server offers, what each costs.

An entry names one model on one provider: where it is reached, which environment variable
holds the server's key for it (never the key itself), its context budget and output ceiling,
its edit dialect, whether it takes ``response.steer``, and its prices per million tokens. The
entries are read from ``models.toml`` (``SPARK_MODELS_FILE``); today's environment variables
still define a single default entry (docs/models.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from spark_ide.upstream.config import ProviderConfig, server_key_label
from spark_ide.upstream.dialects import EditStyle
from spark_ide.upstream.errors import KEY_MISSING, UpstreamError
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


# The environment variables that pick today's single model; a catalogue entry's connection
# reads the others (timeouts, retries, the cancel strategy) as before, never these.
MODEL_VARIABLES = (
    "SPARK_PROVIDER", "OPENAI_BASE_URL", "OPENAI_API_KEY", "SPARK_MODEL", "SPARK_STEER_MODELS", "SPARK_EDIT_STYLE",
)
ENV_KEY = "OPENAI_API_KEY"  # where the environment's single model finds its key


def env_entry(env: Mapping[str, str]) -> ModelEntry:
    """The single entry today's environment variables define (no ``models.toml``), named by
    its model id; ``ConfigError`` as ``ProviderConfig.from_env`` has them for a bad value."""
    config = ProviderConfig.from_env({**env, ENV_KEY: env.get(ENV_KEY) or "unchecked"})  # the key is read at connect
    return ModelEntry(
        name=config.model, provider=config.provider, base_url=config.base_url, model=config.model, key_env=ENV_KEY,
        edit_style=config.edit_style, steer=config.model in config.steer_models,
    )


def provider_config(entry: ModelEntry, env: Mapping[str, str], *, api_key: str | None = None) -> ProviderConfig:
    """How to reach ``entry``: its provider, URL and model, the key from ``api_key`` when given
    (a person's own key) else from the environment variable the entry names; the upstream
    client's other settings (timeouts, retries, the cancel strategy) from ``env``, as for the
    single model of the environment. ``UpstreamError`` ``key_missing`` when it needs a key and
    has none; ``ConfigError`` for a setting of ``env`` it cannot use."""
    others = {name: value for name, value in env.items() if name not in MODEL_VARIABLES}
    server_key = env.get(entry.key_env) if entry.key_env else None
    key = api_key if api_key is not None else server_key
    if entry.provider == "openai" and not key:
        where = f"the environment variable {entry.key_env}" if entry.key_env else "no key_env"
        raise UpstreamError(KEY_MISSING, f"model {entry.name!r} needs an API key and {where} holds none")
    label = server_key_label(entry.key_env) if api_key is None and server_key else ""
    return ProviderConfig.from_env(
        others, provider=entry.provider, base_url=entry.base_url, model=entry.model, api_key=key or None,
        key_label=label, steer_models=frozenset({entry.model}) if entry.steer else frozenset(),
        edit_style=entry.edit_style,
    )


@dataclass(frozen=True, slots=True)
class Catalogue:
    """The models this server offers. ``default``: the entry a workspace that picked none
    uses (the file's ``default``, else its first entry); ``problems``: the entries left out,
    one line each naming the entry and the field (logged at start); ``source``: the file read,
    or "" for the environment's single entry."""

    entries: tuple[ModelEntry, ...]
    default: str
    problems: tuple[str, ...] = ()
    source: str = ""

    def get(self, name: str) -> ModelEntry | None:
        return next((entry for entry in self.entries if entry.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(entry.name for entry in self.entries)

    @property
    def default_entry(self) -> ModelEntry:
        found = self.get(self.default)
        assert found is not None  # a catalogue is built with its default among its entries
        return found

    def resolve(self, chosen: str, allowed: Sequence[str] = ()) -> ModelEntry:
        """The entry a workspace runs on: ``chosen`` (its pick; "" for none), among ``allowed``
        when that is not empty (its course's models); a pick that is not (or no longer) in
        the catalogue or not allowed gives the default, or the first allowed entry."""
        usable = [entry for entry in self.entries if not allowed or entry.name in allowed]
        for name in (chosen, self.default):
            found = self.get(name)
            if found is not None and found in usable:
                return found
        return usable[0] if usable else self.default_entry


def single(entry: ModelEntry) -> Catalogue:
    """The catalogue of one entry (the environment's)."""
    return Catalogue(entries=(entry,), default=entry.name)
