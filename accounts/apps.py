from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class AccountsConfig(AppConfig):
    default = True
    name = "accounts"
    verbose_name = "Access"


class ConsoleAdminConfig(admin_apps.AdminConfig):
    """``django.contrib.admin`` with the console's admin site (listed in INSTALLED_APPS in its place)."""

    default = False
    default_site = "accounts.admin_site.ConsoleAdminSite"
