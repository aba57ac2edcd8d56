"""The guardian object permissions on pools, kept equal to what the role policies decide.

They are a mirror for code that asks Django (``user.has_perm("view_pool", pool)``); every decision of the
console itself comes from the gate (``accounts.access``). The mirror follows each change of roles, of pools
and of who holds which role (``accounts.signals.roles_changed``).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.dispatch import receiver
from guardian.models import UserObjectPermission

from accounts.access import allows, forget_roles
from accounts.signals import roles_changed
from pools.engine.permissions import USE_POOL, VIEW_POOL
from pools.models import Pool

# Guardian permission on a pool -> the catalogue permission it mirrors.
POOL_PERMISSIONS = {"view_pool": VIEW_POOL, "use_pool": USE_POOL}
POOL_PERMISSION_NAMES = {"view_pool": "Can view pool", "use_pool": "Can use pool (run workflows)"}


def pool_permissions() -> dict[str, Permission]:
    """The guardian permissions on pools (``view_pool`` and the custom ``use_pool``), created when missing."""
    content_type = ContentType.objects.get_for_model(Pool)
    return {
        codename: Permission.objects.get_or_create(
            content_type=content_type, codename=codename, defaults={"name": POOL_PERMISSION_NAMES[codename]}
        )[0]
        for codename in POOL_PERMISSIONS
    }


@transaction.atomic
def pool_permissions_sync(*, users: Iterable | None = None) -> dict[str, int]:
    """Make the guardian object permissions on pools equal what the role policies decide.

    Per user (not per role group): a Deny in one role takes away what another role allows, which
    a union of group permissions cannot express. ``users`` limits the work to those users (after their
    roles changed); None recomputes everyone (after a role or pool changed). Returns counts added and removed.
    """
    permissions = pool_permissions()
    permission_ids = {permission.pk: codename for codename, permission in permissions.items()}
    content_type = ContentType.objects.get_for_model(Pool)
    pools = list(Pool.objects.values_list("pk", "name"))
    people = get_user_model().objects.all() if users is None else [user for user in users]
    wanted: set[tuple[int, int, str]] = set()
    for person in people:
        forget_roles(person)
        for codename, action in POOL_PERMISSIONS.items():
            wanted.update(
                (person.pk, permissions[codename].pk, str(pool_pk))
                for pool_pk, pool_name in pools
                if allows(person, action, pool_name)
            )
    existing_rows = UserObjectPermission.objects.filter(content_type=content_type, permission_id__in=permission_ids)
    if users is not None:
        existing_rows = existing_rows.filter(user_id__in=[person.pk for person in people])
    existing = {
        (row[1], row[2], row[3]): row[0]
        for row in existing_rows.values_list("pk", "user_id", "permission_id", "object_pk")
    }
    stale = [pk for key, pk in existing.items() if key not in wanted]
    UserObjectPermission.objects.filter(pk__in=stale).delete()
    missing = wanted - existing.keys()
    UserObjectPermission.objects.bulk_create(
        UserObjectPermission(user_id=user_id, permission_id=permission_id, content_type=content_type, object_pk=pk)
        for user_id, permission_id, pk in missing
    )
    return {"added": len(missing), "removed": len(stale)}


@receiver(roles_changed, dispatch_uid="pools.guardian-mirror")
def _roles_changed(sender, users, **kwargs):
    pool_permissions_sync(users=users)
