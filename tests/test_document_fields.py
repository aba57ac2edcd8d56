"""Each config document's fields live in one place (``pools.configs.fields``); every reader of a pool follows it.

A field added to ``POOL_DOCUMENT`` appears in the canonical body, the API's schema and the page's form, and a
field removed disappears from all of them: nothing else lists a pool's fields.
"""

from pools.api.serializers import PlatformBodySerializer, PoolSerializer
from pools.choices import ConfigType
from pools.configs import PLATFORM_DOCUMENT, POOL_DOCUMENT, normalize_body
from pools.configs.fields import BACKEND_FIELDS, ROLE_FIELDS
from pools.forms import DOCUMENT_POOL_FIELDS, PLAIN_POOL_FIELDS, PoolForm
from pools.models import Pool

POOL_NAMES = [field.name for field in POOL_DOCUMENT]
PLATFORM_NAMES = [field.name for field in PLATFORM_DOCUMENT]


def test_a_normalised_pool_has_exactly_the_documents_fields_in_its_order():
    body = normalize_body(ConfigType.POOL, "p", {"platforms": {"a": {}}})
    assert list(body) == POOL_NAMES
    assert list(body["platforms"]["a"]) == PLATFORM_NAMES


def test_the_api_schema_shows_the_documents_fields():
    assert set(PoolSerializer().fields) == {"name", *POOL_NAMES}
    assert set(PlatformBodySerializer().fields) == set(PLATFORM_NAMES)


def test_the_form_edits_every_plain_and_document_field_and_keeps_the_rest():
    form_fields = set(PoolForm.base_fields)
    assert set(PLAIN_POOL_FIELDS) | set(DOCUMENT_POOL_FIELDS) <= form_fields
    kept = set(POOL_NAMES) - set(PLAIN_POOL_FIELDS) - set(DOCUMENT_POOL_FIELDS)
    assert kept == {"default_exit_actions", "action_permissions", "resources", "topology_keys"}
    assert {"gpu_guarantee", "gpu_maximum", "gpu_weight"} <= form_fields  # resources.gpu, field by field


def test_every_document_field_is_a_model_column():
    columns = {field.name for field in Pool._meta.get_fields()}
    assert set(POOL_NAMES) <= columns
    from pools.models import Backend, Platform

    assert set(PLATFORM_NAMES) <= {field.name for field in Platform._meta.get_fields()}
    assert set(BACKEND_FIELDS) <= {field.name for field in Backend._meta.get_fields()}
    from accounts.models import Role

    assert set(ROLE_FIELDS) <= {field.name for field in Role._meta.get_fields()}
