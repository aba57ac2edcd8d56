"""Admin pages for identities and tokens; user edits recompute the user's pool permissions."""

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from .models import ApiToken, ExternalIdentity
from .services import pool_permissions_sync


@admin.register(ExternalIdentity)
class ExternalIdentityAdmin(admin.ModelAdmin):
    """Which identity-provider account each user signs in as (read-only: sign-in writes these)."""

    list_display = ["user", "subject", "issuer", "last_login_at"]
    search_fields = ["user__username", "subject"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Every user's tokens; an administrator can revoke one by setting its revoked time."""

    list_display = ["name", "user", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "user__username", "prefix"]
    readonly_fields = ["user", "name", "prefix", "created_at", "expires_at", "last_used_at"]

    def has_add_permission(self, request):
        # A token is shown once to whoever creates it: only its owner, on the profile page or with poolctl.
        return False


class ConsoleUserAdmin(UserAdmin):
    """The stock user admin; saving a user's groups (roles) recomputes their pool permissions."""

    def save_related(self, request, form, formsets, change):
        """Save the groups, then bring the user's guardian pool permissions in line with their roles."""
        super().save_related(request, form, formsets, change)
        pool_permissions_sync(users=[form.instance])


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, ConsoleUserAdmin)
