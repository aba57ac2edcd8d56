"""Roles: named sets of Allow/Deny policies that decide who may do what (SEMANTICS.md §7)."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from pools.engine.permissions import VIEW_ROLE

from .access import is_system, visible


class SyncMode(models.TextChoices):
    """How sign-in treats a role the identity provider grants or stops granting."""

    IMPORT = "import", "Import (add at login)"
    FORCE = "force", "Force (add and remove at login)"
    IGNORE = "ignore", "Ignore (leave alone)"


class RoleQuerySet(models.QuerySet):
    def restrict(self, principal):
        """The roles ``principal`` may see (``VIEW_ROLE`` on ``role/<name>``)."""
        if is_system(principal):
            return self
        return self.filter(name__in=visible(principal, VIEW_ROLE, Role.objects.values_list("name", flat=True)))


class Role(models.Model):
    """A role named like ``osmo-<prefix>`` with policies over actions and resources."""

    name = models.CharField(max_length=128, unique=True)
    description = models.TextField(blank=True)
    policies = models.JSONField(default=list, blank=True)
    external_roles = models.JSONField(default=list, blank=True)
    sync_mode = models.CharField(max_length=16, choices=SyncMode.choices, default=SyncMode.IMPORT)
    immutable = models.BooleanField(default=False)
    builtin = models.BooleanField(default=False, editable=False)

    objects = RoleQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class ExternalIdentity(models.Model):
    """The identity provider's account behind a user: matched by issuer and ``sub``, never by email."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="external_identity")
    issuer = models.CharField(max_length=512)
    subject = models.CharField(max_length=255)
    last_login_at = models.DateTimeField(default=timezone.now)
    # The provider's groups at the last sign-in, as sent (``/team-a``): what a unit's members of kind ``group`` name.
    groups = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="unique_external_subject")]
        verbose_name_plural = "external identities"

    def __str__(self):
        return f"{self.subject} at {self.issuer}"


class ApiToken(models.Model):
    """A personal access token for scripts; only its SHA-256 digest is stored, the token is shown once.

    A token acts with its owner's roles at the time of each request.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=128)
    prefix = models.CharField(max_length=16, help_text="the first characters of the token, to recognise it")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    def is_usable(self, now=None) -> bool:
        """Not revoked and not expired."""
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class ServiceAccount(models.Model):
    """A user that is a program, not a person (Run:ai's "applications"): tokens only, no password, no browser.

    Created and given roles by an administrator (SEMANTICS.md §7.2); its tokens act with its roles.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="service_account")
    description = models.TextField(blank=True)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"service account {self.user}"
