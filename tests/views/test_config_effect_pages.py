"""The editors' "Preview changes" step: what saving would move (nodes, GPUs, workloads), shown before anything is
saved, by the same selector as the API's and ``poolctl``'s dry runs."""

from console_data import pool_form_data

from pools.models import ConfigRevision, NodeMembership


def members(pool):
    return set(NodeMembership.objects.filter(pool__name=pool).values_list("node__name", flat=True))


def test_the_pool_editor_previews_what_saving_would_move_and_saves_nothing(as_admin):
    before, revisions = members("team-a"), ConfigRevision.objects.count()
    assert before
    data = pool_form_data("team-a", node_label="nowhere=at-all")

    response = as_admin.post("/pools/team-a/edit/", {**data, "preview": "1"})

    assert response.status_code == 200
    html = response.content.decode()
    assert "What saving would move" in html and 'data-testid="effect-team-a"' in html
    effect = response.context["effect"]
    (row,) = effect["pools"]
    assert row["pool"] == "team-a" and set(row["nodes_out"]) == before and row["nodes_in"] == []
    assert row["summary"].startswith(f"{len(before)} nodes, {row['gpus_out']} GPUs leave team-a")
    assert row["summary"] in html
    for node in before:
        assert f'<span class="tag">{node}</span>' in html
    assert ConfigRevision.objects.count() == revisions and members("team-a") == before
    # the form keeps what was typed, and saving it then moves the nodes
    assert response.context["form"]["node_label"].value() == "nowhere=at-all"
    saved = as_admin.post("/pools/team-a/edit/", data)
    assert saved.status_code == 302 and members("team-a") == set()


def test_the_template_editor_previews_the_pools_a_template_change_empties(as_admin):
    revisions = ConfigRevision.objects.count()
    body = "spec:\n  nodeSelector:\n    nowhere: at-all\n"
    response = as_admin.post(
        "/config/templates/development_template/edit/",
        {"name": "development_template", "body": body, "preview": "1"},
    )
    assert response.status_code == 200
    pools = {row["pool"] for row in response.context["effect"]["pools"]}
    assert {"team-a", "team-a-gpu"} <= pools
    assert 'data-testid="effect-table"' in response.content.decode()
    assert ConfigRevision.objects.count() == revisions


def test_a_preview_that_moves_nothing_says_so(as_admin):
    data = pool_form_data("team-a", description="only the words change")
    html = as_admin.post("/pools/team-a/edit/", {**data, "preview": "1"}).content.decode()
    assert 'data-testid="effect-none"' in html
