"""Pod-template merge (SEMANTICS §2).

Templates are folded left to right from ``{}``: dicts merge key by key, lists merge element-wise by ``name``,
any other pair is decided by the later value. Results never share a mutable object with an input, so two
platforms built from the same templates get independent results (OSMO's DB mode aliases them).
"""

import copy
from collections.abc import Iterable, Mapping
from decimal import Decimal

_IMMUTABLE = (str, int, float, bool, type(None), Decimal)


def copy_json(value):
    """Return a deep copy of a JSON-like value: dicts and lists are rebuilt, immutable scalars reused.

    Faster than ``copy.deepcopy`` for template-shaped data, which is the hot path; anything unusual
    (tuples, sets, objects) still goes through ``copy.deepcopy``.
    """
    if isinstance(value, _IMMUTABLE):
        return value
    if isinstance(value, Mapping):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return copy.deepcopy(value)


def merge_values(base, override):
    """Return ``override`` merged onto ``base`` as a new value; neither input is mutated or shared.

    Two mappings merge key by key, recursively. Two lists merge by name (see ``_merge_lists``). For any
    other pair the later value wins, ``None`` included.
    """
    return _merge_into_owned(copy_json(base), override)


def merge_pod_templates(templates: Iterable[Mapping]) -> dict:
    """Return the merge of ``templates`` in order, starting from ``{}``; the inputs are left untouched."""
    result: dict = {}
    for template in templates:
        result = _merge_into_owned(result, template)
    return result


def _merge_into_owned(owned, override):
    """Merge ``override`` into ``owned``, which the caller owns and which may be modified in place.

    Every part taken from ``override`` is copied, so the result shares nothing with it.
    """
    if isinstance(owned, dict) and isinstance(override, Mapping):
        for key, value in override.items():
            owned[key] = _merge_into_owned(owned[key], value) if key in owned else copy_json(value)
        return owned
    if isinstance(owned, list) and isinstance(override, list):
        return _merge_lists(owned, override)
    return copy_json(override)


def _name_key(element):
    """Return the key that identifies a named list element, or ``None`` for an unnamed one.

    Only dicts with a hashable, non-null ``name`` are named. The type is part of the key so that ``1`` and
    ``True`` (equal in Python) never merge.
    """
    if not isinstance(element, Mapping):
        return None
    name = element.get("name")
    if name is None:
        return None
    try:
        hash(name)
    except TypeError:
        return None
    return (type(name), name)


def _merge_lists(owned: list, override: list) -> list:
    """Merge each element of ``override`` into the same-named element of ``owned``, or append it.

    Names are looked at only on dict elements, never inside strings: OSMO searched for the text "name"
    and crashed on ``["hostname"]``. Only the earlier list is searched (SEMANTICS §2 rule 2): two new
    elements with the same name are both appended, and two later elements that match the same earlier
    element are both merged into it, in order.
    """
    positions: dict = {}
    for index, element in enumerate(owned):
        key = _name_key(element)
        if key is not None:
            positions.setdefault(key, index)
    for element in override:
        key = _name_key(element)
        if key is not None and key in positions:
            index = positions[key]
            owned[index] = _merge_into_owned(owned[index], element)
        else:
            owned.append(copy_json(element))
    return owned
