"""``models.toml`` (issue 34, docs/models.md): the worked example parses to its entries; each bad
entry is left out with one line naming the entry and the field while the good ones stay; a file
that does not parse, or holds no usable model, is refused whole; the environment's variables
still make the single entry they made, reached exactly as before."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from spark_ide.upstream import EditStyle, ProviderConfig, UpstreamError
from spark_ide.upstream.catalogue import Catalogue, ModelEntry, env_entry, provider_config
from spark_ide.upstream.catalogue_file import CatalogueError, load_catalogue, parse_catalogue

DOCS = Path(__file__).resolve().parents[2] / "docs" / "models.md"
GOOD = """
[[models]]
name = "good"
provider = "local"
model = "smollm2"
"""


def worked_example() -> str:
    """The models.toml docs/models.md shows."""
    found = re.search(r"```toml\n(.*?)```", DOCS.read_text(), re.S)
    assert found is not None
    return found.group(1)


def test_the_worked_example_of_the_docs_parses_to_its_three_models() -> None:
    catalogue = parse_catalogue(worked_example())
    assert catalogue.problems == ()
    assert catalogue.names == ("smollm2", "gpt-5-mini", "qwen-coder")
    assert catalogue.default == "smollm2"
    local, openai, hosted = catalogue.entries
    assert local == ModelEntry(
        name="smollm2", provider="local", base_url="http://127.0.0.1:8765/v1", model="smollm2",
        context_tokens=2500, max_output_tokens=600, edit_style=EditStyle.WHOLE_FILE,
    )
    assert (openai.provider, openai.key_env, openai.base_url, openai.steer) == (
        "openai", "OPENAI_API_KEY", "https://api.openai.com/v1", True,
    )
    assert openai.prices is not None and openai.prices.input == Decimal("0.25")  # exact, not the float's digits
    assert (hosted.provider, hosted.key_env, hosted.edit_style) == ("openai-compatible", "GROQ_API_KEY", None)


BAD_ENTRIES = [
    ('api_key = "sk-abc"', "api_key", "a key is never written in the catalogue"),
    ('key_env = "sk-proj-abc123"', "key_env", "it looks like a key"),
    ('provider = "anthropic"', "provider", "is not one of local, openai, openai-compatible"),
    ('model = ""', "model", "must be a non-empty string"),
    ('provider = "openai-compatible"\nbase_url = "https://h/v1"\nedit_style = "apply-patch"', "edit_style",
     "needs the Responses API"),
    ('provider = "openai-compatible"', "base_url", "needs its host's base URL"),
    ('base_url = "ftp://h"', "base_url", "must be http(s)://"),
    ("context_tokens = 0", "context_tokens", "must be a whole number from 1"),
    ('steer = "yes"', "steer", "must be true or false"),
    ("prices = { input = -1 }", "prices.input", "must be zero or more"),
    ("prices = { inptu = 1 }", "prices.inptu", "unknown price"),
    ('colour = "red"', "colour", "unknown field"),
]


@pytest.mark.parametrize(("line", "field", "said"), BAD_ENTRIES, ids=[field for _, field, _ in BAD_ENTRIES])
def test_a_bad_entry_is_left_out_naming_the_entry_and_the_field(line: str, field: str, said: str) -> None:
    fields = dict(part.split(" = ", 1) for part in ['provider = "local"', 'model = "m"'])
    for part in line.split("\n"):
        key, value = part.split(" = ", 1)
        fields[key] = value
    bad = "\n".join(["[[models]]", 'name = "broken"', *(f"{key} = {value}" for key, value in fields.items())])
    catalogue = parse_catalogue(GOOD + bad, source="models.toml")
    assert catalogue.names == ("good",)  # the server goes on with the good one
    (problem,) = catalogue.problems
    assert problem.startswith(f"models.toml: model 'broken' (entry 2): {field}: "), problem
    assert said in problem
    assert "sk-abc" not in problem and "sk-proj-abc123" not in problem  # a key pasted in is never repeated


def test_a_second_entry_of_the_same_name_is_left_out() -> None:
    catalogue = parse_catalogue(GOOD + GOOD)
    assert catalogue.names == ("good",)
    assert catalogue.problems == ("models.toml: model 'good' (entry 2): name: a second entry is named 'good'; "
                                  "the entry is left out",)


@pytest.mark.parametrize(("text", "said"), [
    ("[[models]\nname = 'x'", "does not parse as TOML"),
    ("title = 'mine'\n" + GOOD, "unknown top-level key 'title'"),
    ("", "has no [[models]] entries"),
    ("[[models]]\nname = 'only'\nprovider = 'nope'\nmodel = 'm'", "has no usable model"),
    ('default = "other"\n' + GOOD, "default 'other' is not one of the usable models (good)"),
])
def test_a_file_that_cannot_be_used_is_refused_whole(text: str, said: str) -> None:
    with pytest.raises(CatalogueError, match=re.escape(said)):
        parse_catalogue(text)


def test_a_file_that_is_not_there_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(CatalogueError, match="cannot read the model catalogue"):
        load_catalogue(tmp_path / "models.toml")


ENVIRONMENTS = [
    {},
    {"SPARK_PROVIDER": "openai", "OPENAI_API_KEY": "sk-x", "SPARK_MODEL": "gpt-5-codex",
     "SPARK_STEER_MODELS": "gpt-5-codex"},
    {"SPARK_PROVIDER": "openai-compatible", "OPENAI_BASE_URL": "https://h/v1", "SPARK_MODEL": "llama",
     "SPARK_EDIT_STYLE": "edits", "SPARK_UPSTREAM_STALL_S": "7"},
]


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=["local", "openai", "compatible"])
def test_the_environments_single_entry_is_reached_as_before(env: dict[str, str]) -> None:
    entry = env_entry(env)
    assert entry.name == entry.model
    assert provider_config(entry, env) == ProviderConfig.from_env(env)


def test_a_persons_key_replaces_the_servers_and_a_missing_key_says_which_variable() -> None:
    entry = ModelEntry(name="gpt", provider="openai", base_url="https://api.openai.com/v1", model="gpt-5",
                       key_env="TEAM_KEY")
    assert provider_config(entry, {"TEAM_KEY": "sk-team"}).api_key == "sk-team"
    assert provider_config(entry, {"TEAM_KEY": "sk-team"}, api_key="sk-mine").api_key == "sk-mine"
    with pytest.raises(UpstreamError, match="'gpt' needs an API key and the environment variable TEAM_KEY holds none"):
        provider_config(entry, {"OPENAI_API_KEY": "sk-other"})
    named = provider_config(entry, {"TEAM_KEY": "sk-team"}).key_label
    assert named == "the server's key (TEAM_KEY)"  # how a refusal names it


def test_a_workspace_runs_on_its_pick_within_its_courses_models() -> None:
    a, b, c = (ModelEntry(name=n, provider="local", base_url="http://h/v1", model=n) for n in "abc")
    catalogue = Catalogue(entries=(a, b, c), default="a")
    assert catalogue.resolve("") is a
    assert catalogue.resolve("b") is b
    assert catalogue.resolve("gone") is a  # a pick the catalogue no longer has: the default
    assert catalogue.resolve("b", allowed=("c",)) is c  # the course allows only c
    assert catalogue.resolve("", allowed=("b", "c")) is b
