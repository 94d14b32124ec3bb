from django.urls import path

from spark_ide.accounts.guests import GUEST_HOME

from . import api, views
from .usage_page import usage_page

urlpatterns = [
    path("w/<str:workspace_id>/", views.workspace_page, name="workspace"),
    path("sessions/", views.guest_home, name=GUEST_HOME),
    path("usage/", usage_page, name="usage"),
    path("sessions/<str:session_id>/", views.session_page, name="session"),
    path("sessions/<str:session_id>/history", views.session_history, name="session-history"),
    path("sessions/<str:session_id>/history/<str:turn_id>/diff", views.session_turn_diff, name="session-turn-diff"),
    path("sessions/<str:session_id>/tree", views.session_tree, name="session-tree"),
    path("sessions/<str:session_id>/members", views.session_members, name="session-members"),
    path("sessions/<str:session_id>/invites", views.session_invites, name="session-invites"),
    path("sessions/<str:session_id>/join/<str:key>", views.session_join, name="session-join"),
]

api_urlpatterns = [
    path("workspaces/<str:workspace_id>/sessions", api.sessions, name="api-sessions"),
    path("sessions/<str:session_id>/turns", api.turns, name="api-turns"),
]
