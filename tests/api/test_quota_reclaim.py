"""KAI's reclaim check, what-if (SEMANTICS §9.2), through its two doors: ``POST /api/quotas/reclaim/`` and
``poolctl quota reclaim``. Both answer ``{"can_reclaim", "reclaimable", "reasons"}`` for the same document; bad
input is a 400 (or one error line, exit 1) naming the field; any signed-in caller may use it, as the simulator."""

from __future__ import annotations

import json

import pytest
from people import person

# Two departments. a1 holds 1 of its fair share 4 and asks 2: 3 ≤ 4. Its victim b1 is in B: the leveled pair is
# (A, B), B holds 6 > allocatable 4. Then b1 holds 2 and B 5; saturation at A against B: (1 + 2) / 4 = 0.75 ≤ 1.
DOCUMENT = {
    "queues": [
        {"name": "A", "deserved": 4, "fair_share": 4},
        {"name": "B", "deserved": 4, "fair_share": 4},
        {"name": "a1", "parent": "A", "deserved": 4, "fair_share": 4, "allocated": 1},
        {"name": "b1", "parent": "B", "deserved": 2, "fair_share": 2, "allocated": 3},
        {"name": "b2", "parent": "B", "deserved": 2, "fair_share": 2, "allocated": 3},
    ],
    "reclaimer": {"queue": "a1", "gpus": 2, "preemptible": True},
    "victims": [["b1", 1]],
    "multiplier": 1,
}
REASONS = [
    "a1 may start a reclaim: allocated 1 + request 2 = 3 ≤ fair share 4.",
    "Victim 1 (1 GPUs of b1), leveled pair A / B: keep fair share holds: B allocated 6 > allocatable 4.",
    "Saturation of A against B: A's ratio (1 + 2) / 4 = 0.75, B's 5 / 4 = 1.25; passes, as A's ratio is at most 1.",
]


@pytest.fixture
def newcomer(db, client_for):
    """Someone signed in who holds no role at all."""
    return client_for(person("newcomer", password=None))


def test_the_api_answers_the_verdict_to_anyone_signed_in(newcomer):
    response = newcomer.post("/api/quotas/reclaim/", DOCUMENT, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"can_reclaim": True, "reclaimable": True, "reasons": REASONS}


def test_a_refusal_says_which_check_failed(newcomer):
    document = {**DOCUMENT, "reclaimer": {"queue": "a1", "gpus": 4, "preemptible": False}}
    # 1 + 4 = 5 > fair share 4. Saturation at A against B: (1 + 4) / 4 = 1.25 > 1 and 1.25 × 1 ≥ B's 5 / 4.
    answer = newcomer.post("/api/quotas/reclaim/", document, format="json").json()
    assert answer["can_reclaim"] is False and answer["reclaimable"] is False
    assert answer["reasons"][0] == "a1 may not start a reclaim: allocated 1 + request 4 = 5 > fair share 4."
    assert answer["reasons"][-1] == (
        "Saturation of A against B: A's ratio (1 + 4) / 4 = 1.25, B's 5 / 4 = 1.25; not reclaimable: 1.25 > 1 and "
        "1.25 × multiplier 1 ≥ 1.25."
    )


def test_anonymous_callers_are_refused(db, client_for):
    assert client_for(None).post("/api/quotas/reclaim/", DOCUMENT, format="json").status_code == 401


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"victims": [["a1", 1]]}, "victims[0]"),
        ({"victims": [["nobody", 1]]}, "victims[0]"),
        ({"reclaimer": {"queue": "A", "gpus": 1}}, "reclaimer.queue"),
        ({"reclaimer": {"queue": "a1", "gpus": "lots"}}, "reclaimer.gpus"),
        ({"multiplier": -2}, "multiplier"),
        ({"queues": [{"name": "A", "parent": "A"}]}, "queues[0].parent"),
        ({"queues": [{"name": "a1", "fair_share": -5}]}, "queues[0].fair_share"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(newcomer, changes, field):
    response = newcomer.post("/api/quotas/reclaim/", {**DOCUMENT, **changes}, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert field in {error["field"] for error in errors} and all(error["message"] for error in errors)


def test_a_body_that_is_not_an_object_is_a_400(newcomer):
    assert newcomer.post("/api/quotas/reclaim/", [1, 2], format="json").status_code == 400


def test_poolctl_prints_the_two_answers_then_the_reasons(poolctl, tmp_path):
    path = tmp_path / "reclaim.yaml"
    path.write_text(json.dumps(DOCUMENT))
    result = poolctl("quota", "reclaim", "--file", str(path))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["May", "start", "a", "reclaim:", "yes"]
    assert lines[1].split() == ["Victims", "reclaimable:", "yes"]
    assert lines[2:] == [f"  - {reason}" for reason in REASONS]


def test_poolctl_json_is_the_apis_answer(poolctl, tmp_path, newcomer):
    path = tmp_path / "reclaim.json"
    path.write_text(json.dumps(DOCUMENT))
    result = poolctl("quota", "reclaim", "-f", str(path), "--json")
    assert json.loads(result.out) == newcomer.post("/api/quotas/reclaim/", DOCUMENT, format="json").json()


def test_poolctl_says_what_is_wrong_in_one_line_and_exits_1(poolctl, tmp_path):
    path = tmp_path / "reclaim.json"
    path.write_text(json.dumps({**DOCUMENT, "victims": [["b1", "some"]]}))
    result = poolctl("quota", "reclaim", "--file", str(path))
    assert result.code == 1
    assert result.err.startswith("Error: victims[0]: must be") and "Traceback" not in result.err
    assert poolctl("quota", "reclaim", "--file", str(tmp_path / "missing.json")).code == 1
