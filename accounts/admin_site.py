"""The Django admin for console administrators only: staff or holders of ``osmo-admin``.

Installed as the default admin site (``accounts.apps.ConsoleAdminConfig`` in ``INSTALLED_APPS``), so every
``admin.register`` lands here. Its login and logout are the console's own, so a Keycloak sign-in works
and sign-out ends the provider's session too.
"""

from urllib.parse import urlencode

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import resolve_url

from .access import is_console_admin


class ConsoleAdminSite(admin.AdminSite):
    """``has_permission`` from ``accounts.access.is_console_admin``; sign-in through the console's login page."""

    def has_permission(self, request):
        """Staff, superusers and ``osmo-admin`` holders only."""
        return is_console_admin(request.user)

    def login(self, request, extra_context=None):
        """Send the browser to the console's sign-in page; a signed-in user who is no administrator gets 403.

        An administrator already signed in goes on to the admin.

        (Sending them to sign in again would loop: the sign-in page returns them here.)
        """
        if self.has_permission(request):
            return HttpResponseRedirect(resolve_url("admin:index"))
        if request.user.is_authenticated:
            raise PermissionDenied("the admin is for console administrators (staff or osmo-admin)")
        target = request.GET.get("next") or resolve_url("admin:index")  # the login page vets it
        return HttpResponseRedirect(f"{resolve_url('login')}?{urlencode({'next': target})}")

    def logout(self, request, extra_context=None):
        """The console's sign-out, which also ends a Keycloak session."""
        from .views import logout_view

        return logout_view(request)
