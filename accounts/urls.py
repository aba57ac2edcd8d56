"""``/accounts/``: sign-in (local and Keycloak), sign-out, profile and tokens, and the caller's identity for scripts."""

from django.urls import include, path

from . import views

urlpatterns = [
    path("login/", views.ConsoleLoginView.as_view(), name="login"),
    path("logout/", views.logout_view, name="logout"),
    path("profile/", views.profile_view, name="profile"),
    path("profile/tokens/", views.token_create_view, name="token_create"),
    path("profile/tokens/<int:token_id>/revoke/", views.token_revoke_view, name="token_revoke"),
    path("api/me/", views.MeView.as_view(), name="api_me"),
    path("oidc/", include("mozilla_django_oidc.urls")),
]
