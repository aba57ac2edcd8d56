"""Config documents: reading files, the fields of each document, and the rules over a whole configuration.

A *state* maps each config type to ``{name: body}``, bodies in the canonical OSMO shape that ``poolctl config
show`` prints and every revision stores. Writes work on states: the services build the state a change would
produce, this package checks it as a whole (field types, names, references, timeouts), and only then is
anything written. That makes an import all-or-nothing and a rollback safe, with one set of rules for every
entry point. Nothing here queries the database, except reading a saved pool's platforms for its body.

- ``files``: JSON/YAML within bounds, bundles and name-keyed files
- ``fields``: each document's fields, ``normalize_*`` and the canonical ``*_body``
- ``state``: references between objects
- ``values``: what people type (config types, revision numbers, ``KEY=VALUE``)
- ``versions``: ETags and merge patches
- ``gpuctl``: gpuctl's ``kind: pool`` files
"""

from .fields import (
    DEPARTMENT_FIELDS,
    MAX_SIMULATED_NODES,
    NAME_RE,
    PLATFORM_DOCUMENT,
    POOL_DOCUMENT,
    PROJECT_FIELDS,
    backend_body,
    check_name,
    department_body,
    normalize_body,
    platform_body,
    pool_body,
    project_body,
    role_body,
    whole_number_problem,
)
from .files import parse_document, read_document, split_document
from .gpuctl import gpuctl_document, gpuctl_file_parse
from .state import (
    Sees,
    default_pool_of,
    department_projects,
    listed,
    named,
    pool_references,
    quota_holders,
    quota_pools,
    sees_everything,
    users_of,
    validate_state,
)
from .values import (
    INT32_MAX,
    QUOTA_SPEC_KEYS,
    parse_assignments,
    parse_config_type,
    parse_quota_spec,
    parse_revision_number,
    parse_revision_ref,
    variable_value,
)
from .versions import body_etag, merge_patch
