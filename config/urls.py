"""URL routes: the Django admin and Prometheus metrics; pages and the API mount here as they are built."""

from django.contrib import admin
from django.urls import include, path

from pools.metrics import MetricsView

urlpatterns = [
    path("", include("pools.urls")),
    path("api/", include("pools.api.urls")),
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    path("metrics", MetricsView.as_view(), name="metrics"),
]
