"""URL routes: the Django admin and Prometheus metrics; pages and the API mount here as they are built."""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView

from config.health import healthz, readyz
from pools.metrics import MetricsView

urlpatterns = [
    path("", include("pools.urls")),
    path("api/", include("pools.api.urls")),
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    path("metrics", MetricsView.as_view(), name="metrics"),
    path("healthz", healthz, name="healthz"),  # liveness and readiness probes (config/health.py)
    path("readyz", readyz, name="readyz"),
    # Browsers ask for /favicon.ico whatever the page links: the console's icon (a static file, no door). Its
    # (hashed) name is looked up when asked for, so that loading the URLs needs no collected static files.
    path("favicon.ico", RedirectView.as_view(url=lazy(static, str)("favicon.svg")), name="favicon"),
]

# A database out of reach answers 503 with Retry-After wherever it showed, not a 500 (pools.middleware).
handler500 = "pools.middleware.server_error"
