from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "pools"
    verbose_name = "GPU pools"

    def ready(self):
        # pools builds on accounts, never the reverse (docs/architecture.md): what accounts needs from pools
        # is plugged in here: the receivers of its signals, the profile's section on pools, and the roles that
        # belonging to a department or a project gives (SEMANTICS §9.4), which the gate counts as any other role.
        from accounts.access import GRANTED_ROLES
        from accounts.selectors import PROFILE_SECTIONS
        from pools import selectors
        from pools.services import access  # noqa: F401

        if selectors.profile_pools not in PROFILE_SECTIONS:
            PROFILE_SECTIONS.append(selectors.profile_pools)
        if selectors.membership_roles not in GRANTED_ROLES:
            GRANTED_ROLES.append(selectors.membership_roles)
