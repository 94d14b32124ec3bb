from django.urls import path

from . import views

urlpatterns = [
    path("sessions/<str:session_id>/replay", views.replay_page, name="session-replay"),
    path("sessions/<str:session_id>/replay/data", views.replay_json, name="session-replay-data"),
]
