"""The one model without a FilterSet in ``pools.filtersets`` yet: platforms, listed across pools by the API."""

import django_filters

from pools.models import Platform


class PlatformFilterSet(django_filters.FilterSet):
    """``?pool=`` and ``?name=`` for platform lists."""

    pool = django_filters.CharFilter(field_name="pool__name")

    class Meta:
        model = Platform
        fields = ["name", "pool", "host_network_allowed", "privileged_allowed"]
