"""Config writes (SEMANTICS.md §1): validation with named fields and references, history, rollback, import."""

import pytest

from accounts.access import SYSTEM
from accounts.models import Role
from pools import selectors, services
from pools.choices import ConfigType
from pools.engine.errors import ConfigError
from pools.models import ConfigRevision, Platform, PodTemplate, Pool

POOL = ConfigType.POOL
TEMPLATE = ConfigType.POD_TEMPLATE
VALIDATION = ConfigType.RESOURCE_VALIDATION


def apply(actor, config_type, name, body, **kwargs):
    return services.config_apply(changes={config_type: {name: body}}, actor=actor, **kwargs)


def error_of(call) -> str:
    """The error's one-line summary followed by every problem it lists."""
    with pytest.raises(ConfigError) as caught:
        call()
    return "\n".join([str(caught.value), *map(str, caught.value.problems)])


@pytest.fixture
def gpu_template(db, actor):
    apply(actor, TEMPLATE, "gpu", {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100"}}})


def pool_body(**overrides):
    body = {
        "backend": "default",
        "common_pod_template": ["default_user", "default_ctrl"],
        "common_resource_validations": ["default_cpu"],
        "platforms": {"h100": {"override_pod_template": ["gpu"]}},
    }
    body.update(overrides)
    return body


class TestReferences:
    def test_a_missing_template_is_rejected_naming_it_and_the_field(self, db, actor):
        message = error_of(lambda: apply(actor, POOL, "train", pool_body()))
        assert "pool 'train'.platforms.h100.override_pod_template" in message
        assert "pod template 'gpu' does not exist" in message
        assert not Pool.objects.exists()

    def test_a_missing_validation_and_backend_are_named(self, db, actor, gpu_template):
        message = error_of(
            lambda: apply(
                actor, POOL, "train", pool_body(backend="nowhere", common_resource_validations=["no_such_rules"])
            )
        )
        assert "backend 'nowhere' does not exist" in message
        assert "and 1 more problem" in message

    def test_a_referenced_template_cannot_be_deleted_and_the_error_lists_the_pools(self, db, actor, gpu_template):
        apply(actor, POOL, "train", pool_body())
        apply(actor, POOL, "infer", pool_body())
        message = error_of(lambda: services.config_delete(config_type=TEMPLATE, name="gpu", actor=actor))
        assert "pod template 'gpu' is used by pools infer, train" in message
        assert PodTemplate.objects.filter(name="gpu").exists()

    def test_an_unreferenced_template_can_be_deleted(self, db, actor, gpu_template):
        services.config_delete(config_type=TEMPLATE, name="gpu", actor=actor)
        assert not PodTemplate.objects.filter(name="gpu").exists()
        assert ConfigRevision.objects.filter(config_type=TEMPLATE).latest("revision").action == "delete"

    def test_built_ins_cannot_be_deleted(self, db, actor):
        message = error_of(lambda: services.config_delete(config_type=TEMPLATE, name="default_user", actor=actor))
        assert "built in" in message

    def test_built_ins_exist_on_every_migrated_database(self, db):
        state = selectors.config_state()
        assert {"default_user", "default_ctrl"} <= state[TEMPLATE].keys()
        assert {"default_cpu", "default_memory", "default_storage", "default_gpu"} <= state[VALIDATION].keys()
        assert {"osmo-admin", "osmo-user", "osmo-default"} <= state[ConfigType.ROLE].keys()
        assert "default" in state[ConfigType.BACKEND]

    def test_restore_builtins_puts_a_changed_builtin_back(self, db, actor):
        apply(actor, TEMPLATE, "default_ctrl", {"spec": {}})
        services.builtins_restore(actor=actor)
        assert PodTemplate.objects.get(name="default_ctrl").spec["spec"]["containers"][0]["name"] == "osmo-ctrl"


class TestPoolFields:
    def test_names_follow_the_pattern(self, db, actor, gpu_template):
        for bad in ("-train", "train-", "tr ain", "1train"):
            assert "must start with a letter" in error_of(lambda name=bad: apply(actor, POOL, name, pool_body()))
        body = pool_body(platforms={"bad name": {}})
        assert "platforms.bad name" in error_of(lambda: apply(actor, POOL, "train", body))

    def test_default_platform_must_be_one_of_the_pools_platforms(self, db, actor, gpu_template):
        message = error_of(lambda: apply(actor, POOL, "train", pool_body(default_platform="a100")))
        assert "default_platform" in message and "'a100' is not a platform of this pool (h100)" in message

    @pytest.mark.parametrize("value", ["30d", "2h", "15m", "10s", "PT2H", "P1D", "1h30m"])
    def test_timeouts_accept_short_and_iso_durations(self, db, actor, gpu_template, value):
        apply(actor, POOL, "train", pool_body(default_exec_timeout=value, max_exec_timeout="60d"))
        assert Pool.objects.get(name="train").default_exec_timeout == value

    def test_a_default_timeout_above_its_max_is_rejected(self, db, actor, gpu_template):
        message = error_of(
            lambda: apply(actor, POOL, "train", pool_body(default_exec_timeout="9h", max_exec_timeout="8h"))
        )
        assert "default_exec_timeout" in message and "longer than max_exec_timeout" in message

    def test_a_malformed_timeout_is_named(self, db, actor, gpu_template):
        assert "max_queue_timeout" in error_of(lambda: apply(actor, POOL, "train", pool_body(max_queue_timeout="soon")))

    def test_unknown_fields_and_wrong_types_are_named(self, db, actor, gpu_template):
        message = error_of(lambda: apply(actor, POOL, "train", pool_body(colour="red", enable_maintenance="yes")))
        assert "pool 'train'.colour: unknown field" in message
        assert "enable_maintenance: must be true or false" in message

    def test_gpu_quota_defaults_and_bounds(self, db, actor, gpu_template):
        apply(actor, POOL, "train", pool_body())
        assert Pool.objects.get().resources == {"gpu": {"guarantee": -1, "maximum": -1, "weight": 1}}
        message = error_of(lambda: apply(actor, POOL, "train", pool_body(resources={"gpu": {"guarantee": -2}})))
        assert "resources.gpu.guarantee" in message

    def test_platforms_are_replaced_with_the_pool(self, db, actor, gpu_template):
        apply(actor, POOL, "train", pool_body(platforms={"h100": {}, "a100": {}}))
        apply(actor, POOL, "train", pool_body(platforms={"a100": {"description": "A100s"}}))
        assert list(Platform.objects.values_list("name", "description")) == [("a100", "A100s")]

    def test_invalid_validation_rules_name_the_rule(self, db, actor):
        message = error_of(
            lambda: apply(
                actor,
                VALIDATION,
                "rules",
                [
                    {"operator": "LE", "left_operand": "1", "right_operand": "2"},
                    {"operator": "XX", "left_operand": "1", "right_operand": "2"},
                ],
            )
        )
        assert "rule 2" in message and "XX" in message

    def test_immutable_roles_cannot_be_changed(self, db, actor):
        message = error_of(lambda: apply(actor, ConfigType.ROLE, "osmo-admin", {"policies": []}))
        assert "immutable" in message


class TestHistory:
    def test_every_change_is_a_revision_numbered_per_type(self, db, actor, gpu_template):
        apply(actor, POOL, "train", pool_body(), description="first pool", tags=["v1"])
        apply(actor, POOL, "train", pool_body(description="changed"))
        pools = ConfigRevision.objects.filter(config_type=POOL).order_by("revision")
        assert [(r.revision, r.action, r.name, r.username) for r in pools] == [
            (1, "create", "train", "tester"),
            (2, "update", "train", "tester"),
        ]
        assert pools[0].description == "first pool" and pools[0].tags == ["v1"]
        assert ConfigRevision.objects.filter(config_type=TEMPLATE).latest("revision").revision == 2

    def test_a_change_that_changes_nothing_records_nothing(self, db, actor, gpu_template):
        apply(actor, POOL, "train", pool_body())
        assert apply(actor, POOL, "train", pool_body()) == []

    def test_a_revision_shows_the_state_at_that_time(self, db, actor, gpu_template):
        apply(actor, POOL, "train", pool_body(description="one"))
        apply(actor, POOL, "train", pool_body(description="two"))
        assert (
            selectors.config_show(user=SYSTEM, config_type=POOL, name="train", revision=1)["train"]["description"]
            == "one"
        )
        assert selectors.config_show(user=SYSTEM, config_type=POOL, name="train")["train"]["description"] == "two"

    def test_diff_shows_what_changed(self, db, actor, gpu_template):
        apply(actor, POOL, "train", pool_body(description="one"))
        apply(actor, POOL, "train", pool_body(description="two"))
        diff = selectors.config_diff(user=SYSTEM, config_type=POOL, revision=1, other=2)
        assert '-  "description": "one",' in diff and '+  "description": "two",' in diff
        assert selectors.config_diff(user=SYSTEM, config_type=POOL, revision=2) == ""

    def test_rollback_restores_a_revision_as_a_new_revision(self, db, actor, gpu_template):
        apply(actor, POOL, "train", pool_body(description="one"))
        apply(actor, POOL, "train", pool_body(description="two"))
        apply(actor, POOL, "later", pool_body())
        (revision,) = services.config_rollback(config_type=POOL, revision=1, actor=actor)
        assert (revision.revision, revision.action) == (4, "rollback")
        assert Pool.objects.get(name="train").description == "one"
        assert not Pool.objects.filter(name="later").exists()

    def test_rollback_that_would_break_references_is_refused(self, db, actor):
        apply(actor, TEMPLATE, "gpu", {"spec": {}})  # POD_TEMPLATE:2 has gpu
        apply(actor, TEMPLATE, "extra", {"spec": {}})  # POD_TEMPLATE:3
        apply(actor, POOL, "train", pool_body(common_pod_template=["extra"]))
        message = error_of(lambda: services.config_rollback(config_type=TEMPLATE, revision=2, actor=actor))
        assert "cannot roll back to POD_TEMPLATE:2: pod template 'extra' is used by pool train" in message
        assert PodTemplate.objects.filter(name="extra").exists()

    def test_rollback_to_the_current_state_says_so(self, db, actor, gpu_template):
        assert "nothing to roll back" in error_of(
            lambda: services.config_rollback(config_type=TEMPLATE, revision=2, actor=actor)
        )

    def test_tags_are_set_and_deleted(self, db, actor, gpu_template):
        services.config_tag(config_type=TEMPLATE, revision=2, add=["good", "prod"], actor=actor)
        tagged = services.config_tag(config_type=TEMPLATE, revision=2, add=["x"], remove=["prod"], actor=actor)
        assert tagged.tags == ["good", "x"]

    def test_an_unknown_revision_is_named(self, db):
        assert "POOL:9 does not exist" in error_of(
            lambda: selectors.config_show(user=SYSTEM, config_type=POOL, revision=9)
        )


class TestImport:
    BUNDLE = {
        "podTemplates": {"gpu": {"spec": {}}},
        "resourceValidations": {"few_gpus": [{"operator": "LE", "left_operand": "{{USER_GPU}}", "right_operand": "8"}]},
        "pools": {"train": pool_body(common_resource_validations=["few_gpus"])},
        "roles": [{"name": "osmo-train", "policies": [{"actions": ["workflow:*"], "resources": ["pool/train*"]}]}],
    }

    def test_a_bundle_with_helm_values_keys_imports_everything(self, db, actor):
        services.config_import(data=self.BUNDLE, actor=actor)
        assert Pool.objects.get(name="train").common_resource_validations == ["few_gpus"]
        assert Role.objects.filter(name="osmo-train").exists()

    def test_one_error_and_nothing_is_written(self, db, actor):
        bad = {**self.BUNDLE, "pools": {"train": pool_body(common_resource_validations=["missing"])}}
        before = ConfigRevision.objects.count()
        assert "resource validation 'missing' does not exist" in error_of(
            lambda: services.config_import(data=bad, actor=actor)
        )
        assert ConfigRevision.objects.count() == before
        assert not PodTemplate.objects.filter(name="gpu").exists()
        assert not Role.objects.filter(name="osmo-train").exists()

    def test_reimporting_updates_existing_objects(self, db, actor):
        services.config_import(data=self.BUNDLE, actor=actor)
        changed = {"pools": {"train": pool_body(description="new", common_resource_validations=["few_gpus"])}}
        services.config_import(data=changed, actor=actor)
        assert Pool.objects.get(name="train").description == "new"

    def test_a_name_keyed_file_and_a_single_pool_body_import(self, db, actor):
        services.config_import(data={"gpu": {"spec": {}}}, actor=actor)
        services.config_import(data={"name": "train", **pool_body()}, actor=actor)
        assert Pool.objects.filter(name="train").exists()


def test_an_immutable_role_can_be_mapped_to_idp_groups_but_its_policies_stay(db, actor):
    services.config_apply(
        changes={
            ConfigType.ROLE: {
                "osmo-admin": {
                    "policies": [{"effect": "Allow", "actions": ["*:*"], "resources": ["*"]}],
                    "immutable": True,
                    "description": Role.objects.get(name="osmo-admin").description,
                    "external_roles": ["/gpu-admins"],
                }
            }
        },
        actor=actor,
    )
    assert Role.objects.get(name="osmo-admin").external_roles == ["/gpu-admins"]
    message = error_of(lambda: apply(actor, ConfigType.ROLE, "osmo-admin", {"policies": [], "immutable": True}))
    assert "immutable" in message
