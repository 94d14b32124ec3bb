from django.urls import path

from . import api, views

urlpatterns = [
    path("", views.workspace_list, name="workspace-list"),
    path("workspaces/new", views.workspace_new, name="workspace-new"),
    path("workspaces/import", views.workspace_import, name="workspace-import"),
    path("w/<str:workspace_id>/export.zip", views.workspace_export, name="workspace-export"),
]

api_urlpatterns = [
    path("workspaces", api.workspaces, name="api-workspaces"),
    path("workspaces/<str:workspace_id>", api.workspace, name="api-workspace"),
    path("workspaces/<str:workspace_id>/files/<path:path>", api.file, name="api-file"),
]
