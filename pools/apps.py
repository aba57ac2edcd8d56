from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "pools"
    verbose_name = "GPU pools"

    def ready(self):
        # Receivers of accounts' signals (accounts does not import pools).
        from pools.services import access  # noqa: F401
