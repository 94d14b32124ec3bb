"""The public read-only page of a workspace: its files highlighted by Pygments, for anyone, no
account needed, only while the owner has it switched on (``Workspace.public``, off by default).

Switched off, the page answers 404 exactly as for a workspace that does not exist, so a link
that went round says nothing once the owner has taken it back. Nothing on the page writes, and
it carries no script. The owner switches it from the live page (``_public_toggle.html``).
"""

from __future__ import annotations

import functools
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

import pygments
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.http import require_GET, require_POST
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from spark_ide.accounts.guests import guests_allowed
from spark_ide.accounts.services import signed_in_user
from spark_ide.editing import workspace_files

from . import documents
from .languages import language_for
from .models import Workspace
from .services import WorkspaceError, checked_path, workspace_for
from .tree import Node, build_tree

# Files shown on the page itself, in tree order, until their text adds up to this; the others
# are a link to their own page (a workspace may hold thousands of files of up to a megabyte).
INLINE_CHARS = 256 * 1024
# Where a file is looked at to tell text from binary (git looks at as much for a NUL).
BINARY_SAMPLE = 8000
# Past this share of control characters in the sample a file is binary, NUL or not.
BINARY_CONTROL_SHARE = 0.3
_TEXT_CONTROLS = frozenset("\t\n\r\f\v\x1b")  # control characters text files do hold
_STYLE = "default"


@dataclass(frozen=True)
class ShownFile:
    """One file as the public page shows it: highlighted, binary, or only a link."""

    path: str
    anchor: str  # the element id of its section; safe in an attribute and a URL fragment
    url: str  # its own page
    language: str
    size: int  # bytes (UTF-8)
    binary: bool
    html: str = ""  # Pygments' markup; empty when binary or left to its own page


@dataclass
class PublicNode:
    """A tree entry of the public page: folders nest, files link to where they are shown."""

    name: str
    is_dir: bool
    href: str = ""
    children: list[PublicNode] = field(default_factory=list)


# ---- what is shown ----------------------------------------------------------------------


def public_workspace(workspace_id: str) -> Workspace:
    """The workspace if its owner made it public; anything else is not found (404)."""
    try:
        return Workspace.objects.get(pk=uuid.UUID(workspace_id), public=True)
    except (ValueError, Workspace.DoesNotExist):
        raise Http404("no such workspace") from None


def workspace_publish(*, workspace: Workspace, public: bool) -> None:
    """Switch the public page on or off (``updated_at`` stays: no file changed)."""
    workspace.public = public
    workspace.save(update_fields=["public"])


def published_texts(workspace: Workspace) -> dict[str, str]:
    """Every file's text as the owner has it: the live document when this process holds it,
    else what has been persisted of it (stored state plus the updates since), else, for a
    workspace never opened live, its files (the document would be built from them)."""
    live = documents.live_texts(workspace.id)
    if live is not None:
        return live
    if Workspace.objects.filter(pk=workspace.id, ydoc__isnull=False).exists():
        doc = documents.document_load(workspace.id)
        return {str(path): str(text) for path, text in workspace_files(doc).items()}
    return dict(workspace.files.values_list("path", "text"))


def is_binary(text: str) -> bool:
    """A NUL, or mostly control characters, near the start; or text that UTF-8 cannot encode."""
    sample = text[:BINARY_SAMPLE]
    if "\x00" in sample:
        return True
    controls = sum(1 for ch in sample if ch not in _TEXT_CONTROLS and unicodedata.category(ch) == "Cc")
    if sample and controls / len(sample) > BINARY_CONTROL_SHARE:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def byte_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def anchor_for(path: str) -> str:
    """``file-`` and the path, percent-encoded down to characters that need no escaping in an
    attribute or a fragment (Pygments writes the line anchors made from it unescaped)."""
    return "file-" + quote(path, safe="/._-~")


def lexer_for(path: str, text: str) -> Lexer:
    """The lexer Pygments picks for the file name (the text settles a tie); else plain text."""
    name = path.rsplit("/", 1)[-1]
    try:
        lexer: Lexer = get_lexer_for_filename(name, code=text[:BINARY_SAMPLE], stripnl=False)
    except ClassNotFound:
        lexer = TextLexer(stripnl=False)
    return lexer


def highlighted(path: str, text: str) -> str:
    """The file as Pygments markup: classes only (no style attributes), numbered lines that
    link to themselves (``#<anchor>-L-<n>``)."""
    formatter = HtmlFormatter(
        style=_STYLE, linenos="inline", lineanchors=f"{anchor_for(path)}-L", anchorlinenos=True, wrapcode=True
    )
    return str(highlight(text, lexer_for(path, text), formatter))


def shown_file(workspace: Workspace, path: str, text: str, *, render_it: bool) -> ShownFile:
    binary = is_binary(text)
    return ShownFile(
        path=path,
        anchor=anchor_for(path),
        url=reverse("workspace-public-file", args=[workspace.id, path]),
        language="binary" if binary else language_for(path),
        size=byte_size(text),
        binary=binary,
        html=highlighted(path, text) if render_it and not binary else "",
    )


def _tree_order(nodes: list[Node]) -> list[str]:
    """File paths in the order the tree shows them (folders first, then files, by name)."""
    order: list[str] = []
    for node in nodes:
        if node.is_dir:
            order.extend(_tree_order(node.children))
        else:
            order.append(node.path)
    return order


def public_tree(nodes: list[Node], href: Callable[[str], str]) -> list[PublicNode]:
    return [
        PublicNode(name=node.name, is_dir=True, children=public_tree(node.children, href))
        if node.is_dir
        else PublicNode(name=node.name, is_dir=False, href=href(node.path))
        for node in nodes
    ]


def _page_context(workspace: Workspace) -> dict[str, object]:
    return {
        "workspace": workspace,
        "index_url": reverse("workspace-public", args=[workspace.id]),
        "css_url": reverse("workspace-public-css") + f"?v={pygments.__version__}",
    }


# ---- views ------------------------------------------------------------------------------


@guests_allowed  # open to everyone: a guest reads what an anonymous visitor reads
@require_GET
@never_cache  # switched off, it must be gone at once, from every cache on the way too
def public_page(request: HttpRequest, workspace_id: str) -> HttpResponse:
    """The tree, then the files in tree order, highlighted, until ``INLINE_CHARS``."""
    workspace = public_workspace(workspace_id)
    texts = published_texts(workspace)
    nodes = build_tree([(path, language_for(path)) for path in texts])
    files, budget = [], INLINE_CHARS
    for path in _tree_order(nodes):
        text = texts[path]
        fits = len(text) <= budget
        if fits:
            budget -= len(text)
        files.append(shown_file(workspace, path, text, render_it=fits))
    anchors = {file.path: f"#{file.anchor}" for file in files}
    context = _page_context(workspace) | {
        "tree": public_tree(nodes, anchors.__getitem__),
        "files": files,
    }
    return render(request, "workspaces/public.html", context)


@guests_allowed
@require_GET
@never_cache
def public_file(request: HttpRequest, workspace_id: str, path: str) -> HttpResponse:
    """One file on its own page (its link from the tree and from its section's heading)."""
    workspace = public_workspace(workspace_id)
    try:
        clean = checked_path(path)
    except WorkspaceError:
        raise Http404("no such file") from None
    texts = published_texts(workspace)
    if clean not in texts:
        raise Http404("no such file")
    nodes = build_tree([(name, language_for(name)) for name in texts])
    context = _page_context(workspace) | {
        "tree": public_tree(nodes, lambda other: reverse("workspace-public-file", args=[workspace.id, other])),
        "file": shown_file(workspace, clean, texts[clean], render_it=True),
    }
    return render(request, "workspaces/public_file.html", context)


# The pages' own layout: the tree beside the files; line numbers are not copied with the code.
_LAYOUT = """
.public-grid { display: grid; grid-template-columns: minmax(12rem, 18rem) minmax(0, 1fr);
  gap: 1rem; align-items: start; }
.public-grid .sidebar { position: sticky; top: 0; max-height: 100vh;
  border: 1px solid var(--line); border-radius: 8px; }
.public-file { background: var(--panel); border: 1px solid var(--line); border-radius: 8px;
  margin-bottom: 1rem; }
.public-file > header { display: flex; gap: 0.75rem; align-items: baseline; padding: 0.4rem 0.75rem;
  border-bottom: 1px solid var(--line); }
.public-file > header h2 { font-family: var(--mono); font-size: 0.95rem; margin: 0; overflow-wrap: anywhere; }
.public-file > p { padding: 0.5rem 0.75rem; margin: 0; }
.public-file .highlight { margin: 0; overflow-x: auto; border-radius: 0 0 8px 8px; }
.public-file .highlight pre { margin: 0; padding: 0.5rem 0.75rem; font-family: var(--mono);
  font-size: 13px; line-height: 1.45; }
.public-file .linenos { user-select: none; color: var(--muted); padding-right: 1em; }
.public-file .highlight a { text-decoration: none; }
@media (max-width: 50rem) {
  .public-grid { grid-template-columns: minmax(0, 1fr); }
  .public-grid .sidebar { position: static; }
}
"""


@functools.cache
def _stylesheet() -> str:
    defs = HtmlFormatter(style=_STYLE).get_style_defs(".highlight")  # type: ignore[no-untyped-call]  # untyped in types-pygments
    return str(defs) + _LAYOUT


@guests_allowed
@require_GET
@cache_control(public=True, max_age=7 * 24 * 3600)  # its URL carries the Pygments version
def public_css(request: HttpRequest) -> HttpResponse:
    """Pygments' token colours for the public pages (a stylesheet: no style attribute, no
    inline style element on the page)."""
    return HttpResponse(_stylesheet(), content_type="text/css; charset=utf-8")


@login_required
@require_POST
def public_toggle(request: HttpRequest, workspace_id: str) -> HttpResponse:
    """The owner switches the public page: POST ``public`` = ``on`` | ``off``. Anyone else's
    workspace is not found. htmx gets the panel back; a plain form goes back to the page."""
    try:
        workspace = workspace_for(user=signed_in_user(request), workspace_id=workspace_id)
    except WorkspaceError:
        raise Http404("no such workspace") from None
    value = request.POST.get("public", "")
    if value not in {"on", "off"}:
        return HttpResponseBadRequest("public must be 'on' or 'off'")
    if value == "on" and Workspace.objects.filter(pk=workspace.pk, enrollment__isnull=False).exists():
        return HttpResponse("a student's copy of a course has no public page: the teacher sees it", status=409)
    workspace_publish(workspace=workspace, public=value == "on")
    if getattr(request, "htmx", False):
        return render(request, "workspaces/_public_toggle.html", {"workspace": workspace, "opened": True})
    return redirect("workspace", workspace_id=workspace.id)
