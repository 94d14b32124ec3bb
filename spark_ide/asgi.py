"""ASGI entry point: Django for HTTP, the session socket for WebSockets."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "spark_ide.settings")

# Django must be set up before anything imports models.
django_http = get_asgi_application()

from spark_ide.ops.memtrace import install_from_env  # noqa: E402

install_from_env()  # the opt-in memory report on SIGUSR1 (SPARK_MEMTRACE=1; docs/operations.md)

from spark_ide.ops.native_memory import release_lost_write_buffers  # noqa: E402

release_lost_write_buffers()  # a lost connection's unsent data goes at once (issue 16, reconnect storms)

from spark_ide.ops.autobahn_debug import defer_debug_formatting  # noqa: E402

defer_debug_formatting()  # autobahn's per-socket debug line is formatted only when logged

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from spark_ide.pairing.routing import websocket_urlpatterns  # noqa: E402
from spark_ide.pairing.ws_auth import SessionSocketAuth  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_http,
        "websocket": SessionSocketAuth(URLRouter(websocket_urlpatterns)),
    }
)

from spark_ide.pairing.adapter import ROOMS  # noqa: E402
from spark_ide.pairing.consumer import SOCKETS  # noqa: E402
from spark_ide.pairing.shutdown import close_rooms_at_shutdown  # noqa: E402

close_rooms_at_shutdown(ROOMS, SOCKETS)  # a stopping server closes its rooms first (lease, last writes)

from spark_ide.ops.gc_freeze import freeze_startup_objects, set_thresholds  # noqa: E402

freeze_startup_objects()  # the collector's full passes skip what start-up made (issue 26)
set_thresholds()  # SPARK_GC_THRESHOLDS, else Python's own (docs/operations.md)
