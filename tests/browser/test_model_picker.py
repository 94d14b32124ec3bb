"""The model picker beside the prompt (issue 34), as people use it: the owner's page shows the
room's model and picks another from the catalogue; another page on the room follows the switch
(the room's ``model`` event), and the pick is stored. Which model server the next turn reaches
is proved in tests/pairing/test_model_picker.py; that only the owner may pick, in
tests/workspaces/test_model_pick.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import IdeServer, daphne, open_new_workspace
from tests.support.catalogue import entry

WAIT_MS = 20_000


@pytest.fixture(scope="module")
def two_model_server(ide_server: IdeServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdeServer]:
    """An IDE whose catalogue has two models, both on the shared scripted model server."""
    data = tmp_path_factory.mktemp("ide-models")
    port = int(ide_server.env["OPENAI_BASE_URL"].rsplit(":", 1)[1].split("/")[0])
    catalogue = data / "models.toml"
    catalogue.write_text(entry("fast", port=port, model="smollm2") + entry("strong", port=port, model="smollm2"))
    with daphne({**ide_server.env, "SPARK_DATA_DIR": str(data), "SPARK_MODELS_FILE": str(catalogue)}, data) as server:
        yield server


@pytest.mark.browser
def test_the_owner_switches_the_model_and_every_page_follows(two_model_server: IdeServer, page: Any) -> None:
    url = open_new_workspace(two_model_server, page, "two models")
    picker = page.locator("#model-picker select")
    assert picker.input_value() == "fast" and picker.is_enabled()
    other = page.context.new_page()  # a second page on the room (the owner's other tab)
    try:
        other.goto(url)
        other.locator("[data-field=connection]", has_text="live").wait_for(timeout=WAIT_MS)
        assert other.locator("#model-picker select").input_value() == "fast"
        picker.select_option("strong")
        page.locator("#model-picker [data-model=status]", has_text="the next turn runs on it").wait_for(timeout=WAIT_MS)
        # The other page was told by the room (the model event), not by its own request.
        other.wait_for_function(
            "() => document.querySelector('#model-picker select').value === 'strong'", timeout=WAIT_MS,
        )
        assert other.locator("#model-picker [data-model=status]").inner_text() == ""
    finally:
        other.close()
    stored = page.evaluate(
        """async () => {
            const workspace = document.getElementById("live").dataset.workspace;
            return (await (await fetch(`/api/workspaces/${workspace}`)).json()).model;
        }"""
    )
    assert stored == "strong"
