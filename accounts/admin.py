"""Admin pages for identities and tokens; user edits recompute the user's pool permissions."""

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import Group

from pools.engine.permissions import VIEW_USER

from .access import visible
from .models import ApiToken, ExternalIdentity, ServiceAccount


def visible_users(request):
    """The users the admin's user may see (``VIEW_USER``)."""
    names = get_user_model().objects.values_list("username", flat=True)
    return get_user_model().objects.filter(username__in=visible(request.user, VIEW_USER, names))


class OfVisibleUsers(admin.ModelAdmin):
    """Rows that belong to a user: only those of users the admin's user may see; added elsewhere, never here."""

    def get_queryset(self, request):
        return super().get_queryset(request).filter(user__in=visible_users(request))

    def has_add_permission(self, request):
        return False


@admin.register(ExternalIdentity)
class ExternalIdentityAdmin(OfVisibleUsers):
    """Which identity-provider account each user signs in as (read-only: sign-in writes these)."""

    list_display = ["user", "subject", "issuer", "last_login_at"]
    search_fields = ["user__username", "subject"]

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ServiceAccount)
class ServiceAccountAdmin(OfVisibleUsers):
    """Which users are programs (read-only: created with ``poolctl user create --service-account`` or the API)."""

    list_display = ["user", "description", "created_by", "created_at"]
    search_fields = ["user__username", "description"]

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(OfVisibleUsers):
    """Every visible user's tokens; an administrator can revoke one by setting its revoked time.

    A token is shown once to whoever creates it, so none is added here.
    """

    list_display = ["name", "user", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "user__username", "prefix"]
    readonly_fields = ["user", "name", "prefix", "created_at", "expires_at", "last_used_at"]


class ConsoleUserAdmin(UserAdmin):
    """The stock user admin, without the fields that grant access.

    Roles (groups), superuser status and Django permissions are given only through the access page,
    ``/api/users/`` or ``poolctl user set-roles``, where the no-escalation rule holds; here they are read-only,
    so the admin cannot become a way around it.
    """

    readonly_fields = ["groups", "user_permissions", "is_superuser", "is_staff", "last_login", "date_joined"]

    def get_queryset(self, request):
        return super().get_queryset(request).filter(pk__in=visible_users(request))


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, ConsoleUserAdmin)
# A role's group is named after the role and held through the services; renaming or editing it here would not be.
if admin.site.is_registered(Group):
    admin.site.unregister(Group)
