"""URL routes: the Django admin and Prometheus metrics; pages and the API mount here as they are built."""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from pools.metrics import MetricsView

urlpatterns = [
    path("", include("pools.urls")),
    path("api/", include("pools.api.urls")),
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    path("metrics", MetricsView.as_view(), name="metrics"),
    # Browsers ask for /favicon.ico whatever the page links: the console's icon (a static file, no door).
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg")), name="favicon"),
]
