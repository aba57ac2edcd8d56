"""The fair-share simulator (SEMANTICS §9.1) through its two doors: ``POST /api/quotas/simulate/`` and
``poolctl quota simulate``. Both answer the engine's shares for the same document; bad input is a 400 (or one
error line) naming each field; any signed-in caller may use it, as it reads and writes no data."""

from __future__ import annotations

import json

import pytest
from people import person

# 16 GPUs between two departments and their projects. Worked by hand from §9.1:
# departments: research asks 13.5 (10 + 3.5), product 9; deserved 8 + 4, 4 remain; weights 1 and 3 offer
# 1 and 3 whole GPUs, both take them: research 9, product 7. Inside research: deserved 6 + 2, 1 remains, offers
# of 0.5 each are floored to 0 and noted; the leftover GPU goes to vision (created first): vision 7, nlp 2.
# Inside product: search deserves 4, its limit 8 leaves 3 of the 3 remaining to take: 7.
DOCUMENT = {
    "capacity": 16,
    "queues": [
        {"name": "research", "deserved": 8, "over_quota_weight": 1},
        {"name": "product", "deserved": 4, "over_quota_weight": 3},
        {"name": "vision", "parent": "research", "deserved": 6, "request": 10},
        {"name": "nlp", "parent": "research", "deserved": 2, "request": 3.5},
        {"name": "search", "parent": "product", "deserved": 4, "request": 9, "limit": 8},
    ],
}
SHARES = {"research": 9, "product": 7, "vision": 7, "nlp": 2, "search": 7}


@pytest.fixture
def newcomer(db, client_for):
    """Someone signed in who holds no role at all."""
    return client_for(person("newcomer", password=None))


def test_the_api_answers_the_fair_shares_to_anyone_signed_in(newcomer):
    response = newcomer.post("/api/quotas/simulate/", DOCUMENT, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"fair_share": SHARES}


def test_fractions_stay_exact_in_the_answer(newcomer):
    document = {"capacity": 1.5, "queues": [{"name": "a", "request": 0.5}, {"name": "b", "request": 0.5}]}
    response = newcomer.post("/api/quotas/simulate/", document, format="json")
    assert response.json() == {"fair_share": {"a": 0.5, "b": 0.5}}


def test_anonymous_callers_are_refused(db, client_for):
    assert client_for(None).post("/api/quotas/simulate/", DOCUMENT, format="json").status_code == 401


@pytest.mark.parametrize(
    ("document", "fields"),
    [
        ({"capacity": -3, "queues": []}, {"capacity"}),
        ({"queues": []}, {"capacity"}),
        ({"capacity": 4}, {"queues"}),
        ({"capacity": 4, "queues": "all"}, {"queues"}),
        ({"capacity": 4, "queues": [{"deserved": 1}]}, {"queues[0].name"}),
        (
            {"capacity": 4, "queues": [{"name": "a", "parent": "missing", "deserved": "x", "weight": 1}]},
            {"queues[0].parent", "queues[0].deserved", "queues[0].weight"},
        ),
        ({"capacity": 4, "queues": [{"name": "a"}, {"name": "a"}]}, {"queues[1].name"}),
        ({"capacity": 4, "queues": [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}]}, None),
        ({"capacity": 1e300, "queues": []}, {"capacity"}),
        ({"capacity": 4, "queues": [{"name": "a", "limit": -2}]}, {"queues[0].limit"}),
    ],
)
def test_bad_input_is_a_400_naming_every_field(newcomer, document, fields):
    response = newcomer.post("/api/quotas/simulate/", document, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert errors and all(error["message"] for error in errors)
    if fields is not None:
        assert {error["field"] for error in errors} >= fields


def test_a_body_that_is_not_an_object_is_a_400(newcomer):
    response = newcomer.post("/api/quotas/simulate/", [1, 2], format="json")
    assert response.status_code == 400


def test_poolctl_prints_the_units_under_their_parents_with_their_shares(poolctl, tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps(DOCUMENT))
    result = poolctl("quota", "simulate", "--file", str(path))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "Capacity: 16 GPUs"
    assert lines[1].split() == ["UNIT", "DESERVED", "LIMIT", "WEIGHT", "PRIORITY", "REQUEST", "FAIR", "SHARE"]
    rows = {line.split()[0]: line for line in lines[3:]}
    assert [line.split()[0] for line in lines[3:]] == ["research", "vision", "nlp", "product", "search"]
    assert rows["vision"].startswith("  vision") and rows["search"].startswith("  search")
    assert {name: row.split()[-1] for name, row in rows.items()} == {k: str(v) for k, v in SHARES.items()}
    assert rows["nlp"].split()[-2] == "3.5"


def test_poolctl_json_is_the_apis_answer(poolctl, tmp_path, newcomer):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(DOCUMENT))
    result = poolctl("quota", "simulate", "-f", str(path), "--json")
    assert json.loads(result.out) == newcomer.post("/api/quotas/simulate/", DOCUMENT, format="json").json()


def test_poolctl_says_what_is_wrong_in_one_line_and_exits_1(poolctl, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"capacity": 4, "queues": [{"name": "a", "deserved": "lots"}]}))
    result = poolctl("quota", "simulate", "--file", str(path))
    assert result.code == 1
    assert result.err.startswith("Error: queues[0].deserved: must be") and "Traceback" not in result.err
    assert poolctl("quota", "simulate", "--file", str(tmp_path / "missing.json")).code == 1


def test_both_doors_take_k_and_usage_for_time_based_fair_share(newcomer, poolctl, tmp_path):
    # SEMANTICS §9.3, equal weights on 10 GPUs, k = 1: a (usage 0.5) s = 1/2, b s = 1: offers 3 1/3 and 6 2/3, the
    # leftover GPU to b
    document = {
        "capacity": 10,
        "k_value": 1,
        "queues": [{"name": "a", "request": 20, "usage": 0.5}, {"name": "b", "request": 20}],
    }
    response = newcomer.post("/api/quotas/simulate/", document, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"fair_share": {"a": 3, "b": 7}}
    path = tmp_path / "usage.json"
    path.write_text(json.dumps(document))
    assert poolctl("quota", "simulate", "--file", str(path), "--json").json() == response.json()
    bad = newcomer.post("/api/quotas/simulate/", {**document, "k_value": "x"}, format="json")
    assert bad.status_code == 400 and "k_value" in bad.content.decode()
