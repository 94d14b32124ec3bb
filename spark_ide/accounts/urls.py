from django.contrib.auth import views as auth_views
from django.urls import path

from . import views
from .guests import guests_allowed

urlpatterns = [
    path("login/", guests_allowed(views.SignInView.as_view()), name="login"),
    path("logout/", guests_allowed(auth_views.LogoutView.as_view()), name="logout"),
    path("account/tokens/", views.tokens, name="tokens"),
    path("account/keys/", views.keys, name="keys"),
]
