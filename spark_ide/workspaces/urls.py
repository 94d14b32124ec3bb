from django.urls import path

from . import api, public, views

urlpatterns = [
    path("", views.workspace_list, name="workspace-list"),
    path("workspaces/new", views.workspace_new, name="workspace-new"),
    path("workspaces/import", views.workspace_import, name="workspace-import"),
    path("w/<str:workspace_id>/export.zip", views.workspace_export, name="workspace-export"),
    path("w/<str:workspace_id>/public", public.public_toggle, name="workspace-public-toggle"),
    path("w/<str:workspace_id>/guard", views.guard_setting, name="workspace-guard-setting"),
    # The public read-only pages: no sign-in, 404 unless the owner switched them on.
    path("p/highlight.css", public.public_css, name="workspace-public-css"),
    path("p/<str:workspace_id>/", public.public_page, name="workspace-public"),
    path("p/<str:workspace_id>/f/<path:path>", public.public_file, name="workspace-public-file"),
]

api_urlpatterns = [
    path("workspaces", api.workspaces, name="api-workspaces"),
    path("workspaces/<str:workspace_id>", api.workspace, name="api-workspace"),
    path("workspaces/<str:workspace_id>/files/<path:path>", api.file, name="api-file"),
]
