from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from spark_ide.accounts.guests import guests_allowed
from spark_ide.api import api_not_found
from spark_ide.ops.views import metrics
from spark_ide.pairing.urls import api_urlpatterns as pairing_api
from spark_ide.workspaces.urls import api_urlpatterns as workspace_api

urlpatterns = [
    path("api/", include(workspace_api)),
    path("api/", include(pairing_api)),
    re_path(r"^api/", api_not_found),
    path("metrics", metrics, name="metrics"),  # Prometheus: staff or the SPARK_METRICS_TOKEN bearer
    # Browsers ask for /favicon.ico whatever the page links; the icon is the SVG in static/.
    path("favicon.ico", guests_allowed(RedirectView.as_view(url=static("favicon.svg"), permanent=True))),
    path("", include("spark_ide.accounts.urls")),
    path("", include("spark_ide.workspaces.urls")),
    path("", include("spark_ide.pairing.urls")),
    path("", include("spark_ide.replay.urls")),
    path("", include("spark_ide.classroom.urls")),
]
