"""The server's model catalogue (docs/models.md): ``models.toml`` when there is one
(``SPARK_MODELS_FILE``, else ``<SPARK_DATA_DIR>/models.toml``), else the single entry today's
environment variables define; and which entry a workspace runs on.

The file is checked at start (``check_at_start``, from ``PairingConfig.ready``): a file that
cannot be read or does not parse stops the server with the reason; each bad entry is logged
(naming the entry and the field) and left out. A file changed while the server runs is read
again at the next look; a change that does not parse is logged and the catalogue read before
it kept.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from dataclasses import replace
from pathlib import Path

from django.conf import settings

from spark_ide.upstream.catalogue import Catalogue, ModelEntry, env_entry, single
from spark_ide.upstream.catalogue_file import CatalogueError, load_catalogue
from spark_ide.upstream.dialects import parse_edit_style

from . import ports
from .models import Workspace

log = logging.getLogger(__name__)

FILE_NAME = "models.toml"


class UnknownModel(Exception):
    """A model name that is not one the workspace may use: ``code`` ``unknown_model`` (not in
    the catalogue) or ``model_not_allowed`` (not one of its course's)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def models_file() -> Path | None:
    """The catalogue file: ``SPARK_MODELS_FILE`` (it must exist), else ``models.toml`` in the
    data directory when there is one; None: the environment's single model."""
    configured = str(getattr(settings, "SPARK_MODELS_FILE", "") or "")
    if configured:
        return Path(configured)
    found = Path(settings.DATA_DIR) / FILE_NAME
    return found if found.is_file() else None


class _Cache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.key: tuple[str, int, int] | None = None
        self.catalogue: Catalogue | None = None


_CACHE = _Cache()


def catalogue() -> Catalogue:
    """The catalogue as it stands (the environment's entry is read afresh each time: tests and
    operators change it). ``CatalogueError`` only when the file never parsed."""
    path = models_file()
    if path is None:
        return single(environment_entry())
    try:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
    except OSError:
        key = (str(path), -1, -1)
    with _CACHE.lock:
        if _CACHE.key == key and _CACHE.catalogue is not None:
            return _CACHE.catalogue
        try:
            loaded = load_catalogue(path)
        except CatalogueError:
            kept = _CACHE.catalogue
            if kept is None or kept.source != str(path):
                raise
            log.exception("the model catalogue %s changed and cannot be used: keeping the one read before", path)
            _CACHE.key = key
            return kept
        for problem in loaded.problems:
            log.error("%s", problem)
        _CACHE.key, _CACHE.catalogue = key, loaded
        return loaded


def environment_entry() -> ModelEntry:
    """The entry of SPARK_PROVIDER / OPENAI_BASE_URL / SPARK_MODEL..., with the budgets and
    dialect the settings worked out for it (SPARK_CONTEXT_TOKENS, SPARK_MAX_OUTPUT_TOKENS,
    SPARK_EDIT_STYLE)."""
    entry = env_entry(os.environ)
    return replace(
        entry, edit_style=parse_edit_style(settings.SPARK_EDIT_STYLE, provider=entry.provider),
        context_tokens=settings.SPARK_CONTEXT_TOKENS,
        max_output_tokens=settings.SPARK_MAX_OUTPUT_TOKENS,
    )


def check_at_start() -> Catalogue:
    """Read the catalogue once at start: each bad entry logged, a file that does not parse a
    ``CatalogueError`` (the caller stops the server with it)."""
    found = catalogue()
    names = ", ".join(found.names)
    if found.source:
        log.info("models: %s (default %s) from %s", names, found.default, found.source)
    return found


def allowed_models(workspace_id: uuid.UUID) -> tuple[str, ...]:
    """The models a workspace may run on: its course's, for a student's copy (empty: any)."""
    return ports.courses().models(workspace_id)


def check_choice(workspace_id: uuid.UUID, name: str) -> ModelEntry:
    """The entry ``name`` when the workspace may run on it; ``UnknownModel`` saying why not."""
    found = catalogue()
    entry = found.get(name)
    if entry is None:
        raise UnknownModel("unknown_model", f"no model {name[:80]!r} here: the models are {', '.join(found.names)}")
    allowed = allowed_models(workspace_id)
    if allowed and name not in allowed:
        raise UnknownModel("model_not_allowed", f"this course allows only {', '.join(allowed)}, not {name[:80]!r}")
    return entry


def entry_for(workspace_id: uuid.UUID) -> ModelEntry:
    """The entry the workspace's turns run on: its pick (``Workspace.model``) when that is in
    the catalogue and allowed by its course, else the default (or its course's first model)."""
    chosen = Workspace.objects.filter(pk=workspace_id).values_list("model", flat=True).first() or ""
    return catalogue().resolve(chosen, allowed_models(workspace_id))


def choices_for(workspace_id: uuid.UUID) -> tuple[ModelEntry, ...]:
    """The entries the workspace's picker offers (its course's, for a student's copy)."""
    allowed = allowed_models(workspace_id)
    return tuple(entry for entry in catalogue().entries if not allowed or entry.name in allowed)

