"""ASGI entry point: Django for HTTP; WebSocket routes join here as they land."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "spark_ide.settings")

# Django must be set up before anything imports models.
django_http = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402

application = ProtocolTypeRouter({"http": django_http})
