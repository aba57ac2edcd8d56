"""Pages of access: roles with the pools each reaches and the permission catalogue, generating a pool role, users and
service accounts with their roles and tokens."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.urls import reverse

from accounts import selectors as account_selectors
from accounts import services as account_services
from accounts.tokens import parse_lifetime

from .. import selectors, services
from ..choices import ConfigType
from ..engine.errors import ConfigError, NotFound
from ..engine.permissions import CHANGE_CONFIG, CHANGE_USER, PERMISSIONS
from ..forms import RoleGenerateForm, ServiceTokenForm, UserCreateForm, UserRolesForm
from .base import DoorPage


def _role_names(user) -> list[str]:
    return list(selectors.roles_visible(user=user).order_by("name").values_list("name", flat=True))


class Access(DoorPage):
    """Roles the user may see, their policies and the pools each reaches, the users, the permission catalogue; and
    the form that generates a pool role."""

    doors = {"GET": "access.overview", "POST": "role.generate"}
    template_name = "pools/roles.html"
    offers = {"can_edit": (CHANGE_CONFIG, ConfigType.ROLE)}

    def access_page(self, form: RoleGenerateForm, status: int = 200):
        user = self.request.user
        rows = selectors.role_reach(user=user, pool_names=selectors.pool_names_visible(user=user))
        context = {
            "rows": rows,
            "form": form,
            "users": account_selectors.users_visible(principal=user),
            "user_form": UserCreateForm(roles=[row["role"].name for row in rows]),
            "permissions": PERMISSIONS,
        }
        return self.page(context, status=status)

    def get(self, request):
        return self.access_page(RoleGenerateForm())

    def post(self, request):
        form = RoleGenerateForm(request.POST)
        if form.is_valid():
            role_name = f"osmo-{form.cleaned_data['prefix']}"
            try:
                services.pool_role_generate(name=role_name, actor=self.actor)
            except NotFound:
                raise  # what the user may not see is a 404 page, not a form error
            except ConfigError as exc:
                form.add_error("prefix", str(exc))
            else:
                return redirect(f"{reverse('pools:roles')}#role-{role_name}")
        return self.access_page(form, status=400)


class UserCreate(DoorPage):
    """Create a person's account or a service account from the access page (the service decides)."""

    door = "user.create"
    template_name = "pools/user_create.html"

    def post(self, request):
        form = UserCreateForm(request.POST, roles=_role_names(request.user))
        if form.is_valid():
            try:
                created = account_services.user_create(principal=request.user, **form.cleaned_data)
            except NotFound:
                raise  # what the user may not see is a 404 page, not a form error
            except ConfigError as exc:
                form.add_error("username", str(exc))
            else:
                messages.success(request, f"Created {created.username}.")
                return redirect("pools:user", username=created.username)
        return self.page({"form": form, "errors": form.errors}, status=400)


class UserDetail(DoorPage):
    """One user: the roles they hold (changed only as the services allow) and, for a service account, tokens.

    A new token is shown once, on this response, which no cache keeps.
    """

    doors = {"GET": "user.get", "POST": "user.roles"}
    template_name = "pools/user_detail.html"
    offers = {"can_change": (CHANGE_USER, "{username}")}

    def user_page(self, *, roles_form=None, token_form=None, new_token=None, status: int = 200):
        username = self.kwargs["username"]
        shown = account_selectors.user_visible(principal=self.request.user, username=username)
        context = {
            "shown": shown,
            "roles_form": roles_form
            or UserRolesForm(initial={"roles": shown["roles"]}, roles=_role_names(self.request.user)),
            "token_form": token_form or ServiceTokenForm(),
            "new_token": new_token,
        }
        response = self.page(context, status=status)
        if new_token:
            response["Cache-Control"] = "no-store"
        return response

    def get(self, request, username: str):
        return self.user_page()

    def post(self, request, username: str):
        if request.POST.get("action") == "token":
            return self.token(request, username)
        roles_form = UserRolesForm(request.POST, roles=_role_names(request.user))
        if roles_form.is_valid():
            try:
                account_services.user_roles_set(
                    principal=request.user, username=username, roles=roles_form.cleaned_data["roles"]
                )
            except NotFound:
                raise  # what the user may not see is a 404 page, not a form error
            except ConfigError as exc:
                roles_form.add_error(None, str(exc))
            else:
                messages.success(request, f"Roles of {username} saved.")
                return redirect("pools:user", username=username)
        return self.user_page(roles_form=roles_form, status=400)

    def token(self, request, username: str):
        token_form = ServiceTokenForm(request.POST)
        if token_form.is_valid():
            try:
                token, secret = account_services.api_token_create_for(
                    username=username,
                    name=token_form.cleaned_data["name"],
                    lifetime=parse_lifetime(token_form.cleaned_data["expires"]),
                    principal=request.user,
                )
            except NotFound:
                raise  # what the user may not see is a 404 page, not a form error
            except ConfigError as exc:
                token_form.add_error(None, str(exc))
            else:
                return self.user_page(new_token={"token": token, "secret": secret}, status=201)
        return self.user_page(token_form=token_form, status=400)
