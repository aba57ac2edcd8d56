"""Sign-in, sign-out, the profile page with personal access tokens, and ``/accounts/api/me/`` for scripts."""

from __future__ import annotations

from django.contrib import auth, messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST
from rest_framework.response import Response
from rest_framework.views import APIView

from pools.engine.errors import NotFound

from . import oidc, selectors, services
from .forms import ApiTokenCreateForm


class ConsoleLoginView(LoginView):
    """The sign-in page: a Keycloak button when a provider is configured, the password form when local login is on.

    ``LoginView`` already answers ``Cache-Control: no-store`` (``never_cache``), so no cache keeps the page.
    """

    template_name = "registration/login.html"

    def post(self, request, *args, **kwargs):
        """Check a local password; refused outright while local login is off."""
        if not oidc.local_login_enabled():
            return HttpResponseNotAllowed(["GET"])
        return super().post(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        """Which ways of signing in the page offers, and whether a provider sign-in just failed."""
        return {
            **super().get_context_data(**kwargs),
            "oidc_enabled": oidc.oidc_enabled(),
            "local_login": oidc.local_login_enabled(),
            "provider_failed": "failed" in self.request.GET,
        }


@require_POST
def logout_view(request):
    """End the Django session and, after a Keycloak sign-in, the provider's session too (end-session endpoint)."""
    target = oidc.provider_logout_url(request)
    auth.logout(request)
    return HttpResponseRedirect(target)


def _profile_page(request, *, form=None, new_token=None, status=200):
    context = {
        **selectors.profile_summary(request.user),
        "tokens": selectors.api_tokens_of(request.user),
        "form": form or ApiTokenCreateForm(),
        "new_token": new_token,
    }
    return render(request, "accounts/profile.html", context, status=status)


@never_cache
@login_required
def profile_view(request):
    """My roles, the pools I can see and my personal access tokens."""
    return _profile_page(request)


profile_view.doors = {"GET": "profile.me"}  # its door of the catalogue (pools.engine.doors)


@never_cache
@login_required
@require_POST
def token_create_view(request):
    """Create a token and show it once, in this response only (it is not kept anywhere in clear).

    ``Cache-Control: no-store``: no browser or proxy cache may keep the page that shows it.
    """
    form = ApiTokenCreateForm(request.POST)
    if not form.is_valid():
        return _profile_page(request, form=form, status=400)
    token, secret = services.api_token_create(
        user=request.user, name=form.cleaned_data["name"], lifetime=form.cleaned_data["lifetime"]
    )
    return _profile_page(request, new_token={"token": token, "secret": secret}, status=201)


@login_required
@require_POST
def token_revoke_view(request, token_id: int):
    """Revoke one of my tokens; someone else's token does not exist for me."""
    try:
        token = services.api_token_revoke(user=request.user, token_id=token_id)
    except NotFound as exc:
        raise Http404(str(exc)) from None
    messages.success(request, f"Token {token.name} revoked.")
    return redirect("profile")


class MeView(APIView):
    """``GET /accounts/api/me/``: who the credential acts as, their roles and the pools they may see."""

    doors = {"GET": "profile.me"}  # signed in: DRF's default permission

    def get(self, request):
        """The caller's profile summary."""
        return Response(selectors.profile_summary(request.user))
