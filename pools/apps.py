from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "pools"
    verbose_name = "GPU pools"

    def ready(self):
        # pools builds on accounts, never the reverse (docs/architecture.md): what accounts needs from pools
        # is plugged in here, the receivers of its signals and the profile's section on pools.
        from accounts.selectors import PROFILE_SECTIONS
        from pools import selectors
        from pools.services import access  # noqa: F401

        if selectors.profile_pools not in PROFILE_SECTIONS:
            PROFILE_SECTIONS.append(selectors.profile_pools)
