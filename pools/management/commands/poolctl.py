"""``python manage.py poolctl``: the operator's CLI, with verbs that follow the ``osmo`` CLI.

Thin: it parses arguments, calls services and selectors, and prints tables or JSON. Errors are one
line on stderr with exit status 1; usage errors exit 2 (argparse).
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts import selectors as access_selectors
from accounts import services as access_services
from accounts.tokens import parse_lifetime
from pools import cli, gate, selectors, services, tables
from pools import doors as pool_doors
from pools.choices import ChangeOrigin, ConfigType, ConsumptionBy
from pools.configs import (
    QUOTA_SPEC_KEYS,
    gpuctl_file_parse,
    parse_assignments,
    parse_config_type,
    parse_quota_spec,
    parse_revision_number,
    parse_revision_ref,
    read_document,
)
from pools.engine.doors import door
from pools.engine.errors import AccessDenied, ConfigError, EngineError
from pools.engine.members import parse_member_spec
from pools.filtersets import IdleGpuFilterSet, NamesFilter, NodeFilterSet, PoolFilterSet
from pools.inventory.records import InventoryError
from pools.models import Backend
from pools.tables import as_json
from pools.tables.workloads import workload_text

logger = logging.getLogger(__name__)

CONSUMPTION_OPTIONS = ("by", "period", "since", "until", "pool", "backend")  # ConsumptionFilterSet's parameters


class Error(CommandError):
    """Printed by Django as ``Error: <message>`` on one line, exit status 1."""


@dataclass(frozen=True)
class Verb:
    """A ``poolctl`` verb: how it is typed, the door of the catalogue it goes through, and which options name the
    door's parameters (``name="pool"``: the door's object is the ``pool`` option)."""

    shown: str
    door: str
    parameters: dict[str, str]

    def gate_parameters(self, options: dict) -> dict[str, str]:
        return {name: options[option] for name, option in self.parameters.items() if options.get(option)}


def verb(shown: str, key: str, **parameters: str):
    """Declares a ``do_*`` method as the verb ``shown``, through door ``key``: the gate decides it before it runs."""

    def declare(method):
        method.verb = Verb(shown, key, parameters)
        return method

    return declare


def revision_argument(text: str) -> int:
    """``--revision N``, read like every revision number (a usage error otherwise)."""
    try:
        return parse_revision_number(text, "--revision")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.problems[0].message) from None


def _filter_options(parser, filterset_class):
    """The FilterSet's parameters as options (``q`` is ``--search``), so a filter means what it means on the
    page and in the API. A repeated option gives several values to a filter that takes names."""
    for name, field in filterset_class.base_filters.items():
        flag = "--search" if name == "q" else f"--{name.replace('_', '-')}"
        parser.add_argument(flag, dest=f"filter_{name}", action="append", metavar="VALUE", help=field.label)


def _filters(options: dict, filterset_class) -> dict:
    """The filters given on the command line, as the FilterSet reads a query string."""
    return {
        name: values if isinstance(field, NamesFilter) else values[-1]
        for name, field in filterset_class.base_filters.items()
        if (values := options[f"filter_{name}"])
    }


def _format_option(parser):
    parser.add_argument("--format", choices=["text", "json"], default="text", help="output format")


class Command(BaseCommand):
    help = "Manage GPU pools: config import/update/show/history/diff/rollback, pool and resource lists, roles."

    def add_arguments(self, parser):
        parser.add_argument("--user", default=None, help="username recorded on revisions (default: your login)")
        parser.add_argument(
            "--as",
            dest="acting_as",
            metavar="USERNAME",
            help="act as this console user, with exactly their permissions (default: the operator, who may do all)",
        )
        groups = parser.add_subparsers(
            dest="group",
            required=True,
            metavar="{config,backend,node,pool,resource,role,access,user,token,create,delete,get,describe,label}",
        )

        config = groups.add_parser("config", help="configuration and its history").add_subparsers(
            dest="verb", required=True
        )
        p = config.add_parser("import", help="import a bundle, a name-keyed file or a pool body")
        p.add_argument("file")
        self._change_options(p)
        p = config.add_parser("update", help="create or replace objects of one type from a file")
        p.add_argument("type")
        p.add_argument("name", nargs="?")
        p.add_argument("--file", "-f", required=True)
        self._change_options(p, dry_run=True)
        p = config.add_parser(
            "set", help="create or replace one object from a file (-f FILE), or generate a pool role: ROLE osmo-P pool"
        )
        p.add_argument("type")
        p.add_argument("name")
        p.add_argument("kind", nargs="?", metavar="pool", help="generate the pool role osmo-<prefix> (type ROLE)")
        p.add_argument("--file", "-f", help="the object's body, or a file naming it (as config update reads it)")
        self._change_options(p, dry_run=True)
        p = config.add_parser("show", help="print objects as they are, or were at a revision")
        p.add_argument("type")
        p.add_argument("name", nargs="?")
        p.add_argument("--revision", "-r", type=revision_argument)
        _format_option(p)
        p = config.add_parser("history", help="list revisions")
        p.add_argument("type", nargs="?")
        p.add_argument("--name")
        _format_option(p)
        p = config.add_parser("diff", help="diff a revision against another or the current state")
        p.add_argument("first", metavar="TYPE:REV")
        p.add_argument("second", metavar="TYPE:REV", nargs="?")
        p = config.add_parser("rollback", help="restore a revision as a new revision")
        p.add_argument("ref", metavar="TYPE:REV")
        p.add_argument("--description", default="")
        p = config.add_parser("tag", help="add or remove tags on a revision")
        p.add_argument("ref", metavar="TYPE:REV")
        p.add_argument("--set", dest="add", action="append", default=[], metavar="TAG")
        p.add_argument("--delete", dest="remove", action="append", default=[], metavar="TAG")
        p = config.add_parser("delete", help="delete an object")
        p.add_argument("type")
        p.add_argument("name")
        p.add_argument("--description", default="")
        p.add_argument("--dry-run", action="store_true", help="show what the change would move; save nothing")
        config.add_parser("restore-builtins", help="reset the built-in templates, validations, roles and backend")

        backend = groups.add_parser("backend", help="cluster backends").add_subparsers(dest="verb", required=True)
        p = backend.add_parser("sync", help="read a backend's inventory now")
        p.add_argument("name", nargs="?")
        p.add_argument("--all", action="store_true", help="sync every backend that has a source")
        p.add_argument("--every", type=float, metavar="SECONDS", help="keep syncing at this interval until stopped")
        _format_option(p)

        p = backend.add_parser("list", help="backends with their sync health")
        _format_option(p)

        p = backend.add_parser("watch", help="follow a backend's changes live until stopped")
        p.add_argument("name")
        p.add_argument("--seconds", type=float, help="stop after this long")

        node = groups.add_parser("node", help="nodes").add_subparsers(dest="verb", required=True)
        p = node.add_parser("label", help="set a label on a node in its cluster")
        p.add_argument("node")
        p.add_argument("label", metavar="KEY=VALUE")
        p.add_argument("--overwrite", action="store_true", help="change a label that already has another value")
        p.add_argument("--backend", help="the node's backend, when several have a node of that name")
        p = node.add_parser("unlabel", help="remove a label from a node in its cluster")
        p.add_argument("node")
        p.add_argument("key")
        p.add_argument("--backend")

        pool = groups.add_parser("pool", help="pools").add_subparsers(dest="verb", required=True)
        p = pool.add_parser("list", help="pools with status and GPU quota")
        _filter_options(p, PoolFilterSet)
        _format_option(p)
        for verb, text in (
            ("render", "the merged pod template of a platform"),
            ("check", "validate a request against the rules and nodes (exit 1 if it fails)"),
        ):
            p = pool.add_parser(verb, help=text)
            p.add_argument("pool")
            p.add_argument("--platform")
            p.add_argument("--set", dest="assignments", action="append", default=[], metavar="KEY=VALUE")
            if verb == "check":
                p.add_argument("--project", help="also say whether the request fits this project's quota on the pool")
                p.add_argument("--pods", type=int, help="a gang of this many such pods (default 1)")
                p.add_argument(
                    "--topology-level", metavar="LEVEL", help="also say where the gang could start at this level"
                )
                p.add_argument(
                    "--topology-required",
                    action="store_true",
                    help="with --topology-level: the gang must start in one domain of it (default: preferred)",
                )
            _format_option(p)
        p = pool.add_parser("capacity", help="gangs of GPUs the pool can start, per topology level and shape")
        p.add_argument("pool")
        p.add_argument(
            "--shape", dest="shapes", action="append", default=[], metavar="PxG", help="also this shape (repeat)"
        )
        p.add_argument("--level", help="only this topology level (a key of the pool's topology_keys)")
        p.add_argument("--gpu-product", help="count only the nodes of this GPU product")
        p.add_argument("--json", action="store_true", help="JSON output")

        resource = groups.add_parser("resource", help="nodes").add_subparsers(dest="verb", required=True)
        p = resource.add_parser("list", help="nodes with their pools and resource usage")
        _filter_options(p, NodeFilterSet)
        _format_option(p)

        resources_help = (
            "a quota on one node pool: nodepool=P,gpu-deserved=N,gpu-limit=M,over-quota-weight=W"
            "[,cpu-deserved=C,cpu-limit=C,memory-deserved=MiB,memory-limit=MiB,priority=N] (repeat per pool)"
        )
        members_help = (
            "a member: user:NAME, group:IDP-GROUP or service_account:NAME, then :researcher, :viewer or :admin "
            "(a department's only); repeat per member"
        )
        department = groups.add_parser("department", help="Run:ai departments").add_subparsers(
            dest="verb", required=True
        )
        p = department.add_parser("create", help="a department with quotas per node pool")
        p.add_argument("name")
        p.add_argument("--description", default="")
        p.add_argument("--resources", action="append", default=[], metavar="SPEC", help=resources_help)
        p.add_argument(
            "--member", dest="members", action="append", default=[], metavar="KIND:NAME:ROLE", help=members_help
        )
        p = department.add_parser("members", help="set who belongs to a department (replaces its members)")
        p.add_argument("name")
        p.add_argument(
            "--member", dest="members", action="append", default=[], metavar="KIND:NAME:ROLE", help=members_help
        )
        p = department.add_parser("list", help="departments with their quotas and projects")
        p.add_argument("--json", action="store_true")
        project = groups.add_parser("project", help="Run:ai projects").add_subparsers(dest="verb", required=True)
        p = project.add_parser("create", help="a project of a department, owning its namespaces' workloads")
        p.add_argument("name")
        p.add_argument("--department", required=True)
        p.add_argument("--namespace", dest="namespaces", action="append", default=[], help="default: runai-NAME")
        p.add_argument("--description", default="")
        p.add_argument("--resources", action="append", default=[], metavar="SPEC", help=resources_help)
        p.add_argument(
            "--member", dest="members", action="append", default=[], metavar="KIND:NAME:ROLE", help=members_help
        )
        p = project.add_parser("members", help="set who belongs to a project (replaces its members)")
        p.add_argument("name")
        p.add_argument(
            "--member", dest="members", action="append", default=[], metavar="KIND:NAME:ROLE", help=members_help
        )
        p = project.add_parser("list", help="projects with their department, namespaces and quotas")
        p.add_argument("--department")
        p.add_argument("--json", action="store_true")

        quota = groups.add_parser("quota", help="quotas per node pool").add_subparsers(dest="verb", required=True)
        p = groups.add_parser("my", help="what one belongs to").add_subparsers(dest="verb", required=True)
        p = p.add_parser("projects", help="one's departments and projects: quota, fair share, what waits and why")
        p.add_argument("--json", action="store_true")
        p = quota.add_parser("list", help="every department's and project's quota, allocation and fair share per pool")
        p.add_argument("--pool")
        p.add_argument("--k-value", help="what-if: the fair share with this k and past usage (nothing is written)")
        p.add_argument("--window", help="what-if: the usage window (default 7d: last week's)")
        p.add_argument("--half-life", help="what-if: the usage half-life (default none)")
        p.add_argument("--json", action="store_true")
        p = quota.add_parser("set", help="set a department's or project's quota on one node pool")
        p.add_argument("unit", metavar="UNIT", help="a department or project (department/NAME, project/NAME)")
        p.add_argument("--pool", required=True)
        for flag, what in (
            ("--gpu-deserved", "GPUs guaranteed (-1: the whole pool)"),
            ("--gpu-limit", "GPUs at most (-1: unlimited)"),
            ("--over-quota-weight", "0 Lowest, 1 Low, 2 Medium, 3 High, None (no over-quota)"),
            ("--cpu-deserved", "CPU cores guaranteed"),
            ("--cpu-limit", "CPU cores at most"),
            ("--memory-deserved", "CPU memory guaranteed, MiB"),
            ("--memory-limit", "CPU memory at most, MiB"),
            ("--priority", "rank among siblings, higher first (100)"),
        ):
            p.add_argument(flag, help=what)
        self._change_options(p)
        p = quota.add_parser("simulate", help="fair shares of a pool's GPUs, as KAI Scheduler divides them")
        p.add_argument("--file", "-f", required=True, metavar="FILE", help='{"capacity": N, "queues": [...]}')
        p.add_argument("--json", action="store_true")
        p = quota.add_parser("reclaim", help="may a job take GPUs back from these victims, as KAI Scheduler decides")
        p.add_argument("--file", "-f", required=True, metavar="FILE", help='{"queues", "reclaimer", "victims"}')
        p.add_argument("--json", action="store_true")

        role = groups.add_parser("role", help="roles").add_subparsers(dest="verb", required=True)
        p = role.add_parser("set", help="generate a pool role: osmo-<prefix> pool")
        p.add_argument("name")
        p.add_argument("kind", choices=["pool"])
        p = role.add_parser("check", help="would these roles allow an action on a resource?")
        p.add_argument("--roles", required=True, help="comma-separated role names")
        p.add_argument("--action", required=True)
        p.add_argument("--resource", default="")
        _format_option(p)

        access = groups.add_parser("access", help="who may do what").add_subparsers(dest="verb", required=True)
        p = access.add_parser("explain", help="which role and policy allow or deny a user an action")
        p.add_argument("--user", dest="subject", required=True, metavar="USERNAME")
        p.add_argument("--action", required=True)
        p.add_argument("--resource", default="")
        _format_option(p)
        access.add_parser("sync", help="recompute every user's pool permissions from the role policies")
        access.add_parser("doors", help="every door (endpoint, page, verb) and the permissions it needs, as Markdown")

        user = groups.add_parser("user", help="people and service accounts").add_subparsers(dest="verb", required=True)
        p = user.add_parser("create", help="create a user, or a service account that uses tokens only")
        p.add_argument("name")
        p.add_argument("--service-account", action="store_true", help="a program: no password, tokens only")
        p.add_argument("--roles", default="", help="comma-separated role names")
        p.add_argument("--email", default="")
        p.add_argument("--description", default="")
        p = user.add_parser("set-roles", help="make a user hold exactly these roles")
        p.add_argument("name")
        p.add_argument("roles", help="comma-separated role names (empty: none)")
        p = user.add_parser("list", help="users and service accounts with their roles")
        _format_option(p)

        token = groups.add_parser("token", help="personal access tokens").add_subparsers(dest="verb", required=True)
        p = token.add_parser("create", help="create a token for a user and print it (shown once)")
        p.add_argument("--user", dest="subject", required=True, metavar="USERNAME")
        p.add_argument("--name", default="poolctl")
        p.add_argument("--expires", default="30d", help="lifetime like 30d, 12h or 2w (at most a year)")

        self._gpuctl_arguments(groups)

    @staticmethod
    def _gpuctl_arguments(groups):
        """gpuctl's verbs (SEMANTICS §8.1): label pools from ``kind: pool`` files, their nodes and labels."""
        p = groups.add_parser("create", help="gpuctl: create or update a label pool from a kind: pool file")
        p.add_argument("-f", "--filename", dest="file", required=True, metavar="FILE")
        p.add_argument("--backend", help="the writable backend, kubernetes or simulated (default: the only one)")
        p.add_argument("--overwrite", action="store_true", help="move nodes that are in another pool")
        p.set_defaults(verb="file")
        delete = groups.add_parser("delete", help="gpuctl: delete a label pool (delete pool NAME, or -f FILE)")
        delete.add_argument("-f", "--filename", dest="file", metavar="FILE")
        delete.add_argument("--force", action="store_true", help="delete even with running or pending workloads")
        kinds = delete.add_subparsers(dest="verb", required=False, metavar="{pool}")
        p = kinds.add_parser("pool", help="delete the pool NAME and remove its label from its nodes")
        p.add_argument("name")
        p.add_argument("--force", action="store_true", default=argparse.SUPPRESS)
        get = groups.add_parser(
            "get", help="gpuctl: list pools, nodes, a node's labels, idle GPUs or GPU-hours"
        ).add_subparsers(dest="verb", required=True)
        p = get.add_parser("pools", help="POOL NAME, STATUS, GPU TOTAL/USED/FREE, NODE COUNT")
        p.add_argument("--json", action="store_true")
        p = get.add_parser("nodes", help="NODE NAME, STATUS, GPUs, GPU TYPE, IP, POOL")
        p.add_argument("--pool")
        p.add_argument("--gpu-type")
        p.add_argument("--json", action="store_true")
        p = get.add_parser("labels", help="a node's labels")
        p.add_argument("name", metavar="NODE")
        p.add_argument("--key")
        p.add_argument("--backend")
        p.add_argument("--json", action="store_true")
        p = get.add_parser("idle", help="NAMESPACE, POD, USER, PROJECT, POOL, GPUS, IDLE GPUS, IDLE FOR")
        _filter_options(p, IdleGpuFilterSet)
        p.add_argument("--json", action="store_true")
        p = get.add_parser("workloads", help="NAMESPACE, NAME, KIND, PROJECT, POOL, USER, GPUS, PHASE, REASON")
        for name in ("pool", "project", "user", "phase", "reason", "backend", "namespace"):
            p.add_argument(f"--{name}", dest=f"filter_{name}", metavar=name.upper())
        p.add_argument("--pending", action="store_true", help="only workloads with a pending pod")
        p.add_argument("--json", action="store_true")
        p = get.add_parser("consumption", help="GPU-hours allocated and idle per pool, user, namespace or project")
        p.add_argument("--by", dest="filter_by", choices=ConsumptionBy.values, default=ConsumptionBy.POOL)
        p.add_argument(
            "--period", dest="filter_period", choices=list(selectors.PERIODS), help="up to now (default: 30d)"
        )
        p.add_argument("--since", dest="filter_since", metavar="ISO", help="start (ISO 8601), instead of --period")
        p.add_argument("--until", dest="filter_until", metavar="ISO", help="end (ISO 8601; default: now)")
        p.add_argument("--pool", dest="filter_pool", metavar="POOL")
        p.add_argument("--backend", dest="filter_backend", metavar="BACKEND")
        p.add_argument("--json", action="store_true")
        describe = groups.add_parser("describe", help="gpuctl: describe a pool or a node").add_subparsers(
            dest="verb", required=True
        )
        p = describe.add_parser("pool")
        p.add_argument("name")
        p.add_argument("--json", action="store_true")
        p = describe.add_parser("node")
        p.add_argument("name")
        p.add_argument("--backend")
        p.add_argument("--json", action="store_true")
        p = describe.add_parser("workload", help="a workload's pods, nodes, why it waits and its phases")
        p.add_argument("name", metavar="NAMESPACE/NAME")
        p.add_argument("--backend", help="needed when workloads of that name exist on several backends")
        p.add_argument("--json", action="store_true")
        label = groups.add_parser("label", help="gpuctl: set or remove a node label").add_subparsers(
            dest="verb", required=True
        )
        p = label.add_parser("node", help="label node NODE KEY=VALUE [--overwrite], or KEY --delete")
        p.add_argument("name", metavar="NODE")
        p.add_argument("label", metavar="KEY=VALUE|KEY")
        p.add_argument("--overwrite", action="store_true")
        p.add_argument("--delete", action="store_true", help="remove the label KEY")
        p.add_argument("--backend")

    @staticmethod
    def _change_options(parser, *, dry_run: bool = False):
        parser.add_argument("--description", default="")
        parser.add_argument("--tag", dest="tags", action="append", default=[])
        if dry_run:
            parser.add_argument(
                "--dry-run",
                action="store_true",
                help="show what the change would move (nodes, GPUs, workloads); save nothing",
            )

    def handle(self, *args, **options):
        self.actor = self._actor(options)
        self.principal = self.actor.principal
        name = options.get("verb") or "file"  # ``delete -f FILE`` names no kind
        handler = getattr(self, f"do_{options['group']}_{name.replace('-', '_')}")
        try:
            if options.get("ref"):
                options["ref_type"], options["ref_revision"] = parse_revision_ref(options["ref"])
            gate.door_check(self.principal, door(handler.verb.door), handler.verb.gate_parameters(options))
            return handler(options)
        except AccessDenied as exc:
            raise Error(f"permission denied: {exc}") from None
        except (ConfigError, EngineError, InventoryError) as exc:
            raise Error(str(exc)) from None
        except CommandError:
            raise
        except Exception as exc:  # never a traceback for the operator; the log keeps the details
            logger.exception("poolctl failed")
            raise Error(f"unexpected failure ({exc.__class__.__name__}: {exc}); rerun with --traceback") from None

    @staticmethod
    def _actor(options) -> services.Actor:
        """The operator (who may do everything), or with ``--as`` a console user with their own permissions."""
        if not options["acting_as"]:
            return services.Actor.system(options["user"] or _login_name(), ChangeOrigin.CLI)
        user = get_user_model().objects.filter(username=options["acting_as"], is_active=True).first()
        if user is None:
            raise Error(f"user '{options['acting_as']}' does not exist")
        return services.Actor.of(user, ChangeOrigin.CLI)

    def out(self, text: str):
        self.stdout.write(text)

    def report(self, revisions):
        if isinstance(revisions, services.Preview):
            self.out(cli.config_effect_text(revisions.effect))
            return
        if not revisions:
            self.out("No changes.")
        for revision in revisions:
            self.out(f"{revision.config_type}:{revision.revision} {revision.description}")

    # config ------------------------------------------------------------------------------------------

    @verb("config import", "config.import")
    def do_config_import(self, o):
        data = read_document(o["file"])
        self.report(
            services.config_import(
                data=data,
                actor=self.actor,
                description=o["description"],
                tags=o["tags"],
                base_dir=os.path.dirname(os.path.abspath(o["file"])),
            )
        )

    @verb("config update TYPE [NAME]", "config.update", config_type="type", name="name")
    def do_config_update(self, o):
        config_type = parse_config_type(o["type"])
        data = read_document(o["file"])
        self.report(
            services.config_update(
                config_type=config_type,
                name=o["name"],
                data=data,
                actor=self.actor,
                description=o["description"],
                tags=o["tags"],
                base_dir=os.path.dirname(os.path.abspath(o["file"])),
                dry_run=o["dry_run"],
            )
        )

    @verb("config set TYPE NAME pool|-f FILE", "config.update", config_type="type", name="name")
    def do_config_set(self, o):
        """OSMO's ``config set``: ``ROLE osmo-<prefix> pool`` generates a pool role (as ``role set``); ``-f FILE``
        creates or replaces the one object ``NAME`` (as ``config update TYPE NAME``)."""
        config_type = parse_config_type(o["type"])
        if o["kind"] is not None and o["kind"] != "pool":
            raise Error(f"unknown kind '{o['kind']}': 'config set ROLE osmo-<prefix> pool' generates a pool role")
        if (o["kind"] is None) == (o["file"] is None):
            raise Error("give 'pool' (config set ROLE osmo-<prefix> pool) or -f FILE, one of them")
        if o["kind"] == "pool":
            if config_type != ConfigType.ROLE:
                raise Error(
                    f"'pool' generates a pool role: 'config set ROLE osmo-<prefix> pool', not {config_type}; "
                    f"give -f FILE to set a {config_type}"
                )
            self.report(
                services.pool_role_generate(
                    name=o["name"], actor=self.actor, description=o["description"], dry_run=o["dry_run"]
                )
            )
            return
        self.report(
            services.config_update(
                config_type=config_type,
                name=o["name"],
                data=read_document(o["file"]),
                actor=self.actor,
                description=o["description"],
                tags=o["tags"],
                base_dir=os.path.dirname(os.path.abspath(o["file"])),
                dry_run=o["dry_run"],
            )
        )

    @verb("config show", "config.show")
    def do_config_show(self, o):
        data = selectors.config_show(
            config_type=parse_config_type(o["type"]), name=o["name"], revision=o["revision"], user=self.principal
        )
        self.out(as_json(data))

    @verb("config history", "config.history")
    def do_config_history(self, o):
        filters = {"config_type": [parse_config_type(o["type"])] if o["type"] else [], "name": o["name"] or ""}
        revisions = [
            selectors.revision_summary(selectors.redacted(r, self.principal))
            for r in selectors.config_history(user=self.principal, filters=filters)
        ]
        self.out(as_json({"revisions": revisions}) if o["format"] == "json" else tables.REVISIONS.text(revisions))

    @verb("config diff", "config.diff")
    def do_config_diff(self, o):
        config_type, revision = parse_revision_ref(o["first"])
        other = None
        if o["second"]:
            other_type, other = parse_revision_ref(o["second"])
            if other_type != config_type:
                raise Error(f"cannot diff {config_type} against {other_type}")
        diff = selectors.config_diff(config_type=config_type, revision=revision, other=other, user=self.principal)
        self.out(diff or "No differences.")

    @verb("config rollback TYPE:REV", "config.rollback", config_type="ref_type", revision="ref_revision")
    def do_config_rollback(self, o):
        config_type, revision = parse_revision_ref(o["ref"])
        self.report(
            services.config_rollback(
                config_type=config_type, revision=revision, actor=self.actor, description=o["description"]
            )
        )

    @verb("config tag TYPE:REV", "config.tag", config_type="ref_type", revision="ref_revision")
    def do_config_tag(self, o):
        config_type, revision = parse_revision_ref(o["ref"])
        tagged = services.config_tag(
            config_type=config_type, revision=revision, add=o["add"], remove=o["remove"], actor=self.actor
        )
        self.out(f"{tagged.config_type}:{tagged.revision} tags: {', '.join(tagged.tags) or '(none)'}")

    @verb("config delete TYPE NAME", "config.update", config_type="type", name="name")
    def do_config_delete(self, o):
        self.report(
            services.config_delete(
                config_type=parse_config_type(o["type"]),
                name=o["name"],
                actor=self.actor,
                description=o["description"],
                dry_run=o["dry_run"],
            )
        )

    @verb("config restore-builtins", "config.import")
    def do_config_restore_builtins(self, o):
        self.report(services.builtins_restore(actor=self.actor))

    # backend / pool / resource / role -------------------------------------------------------------------

    @verb("backend sync NAME|--all", "backend.sync", name="name")
    def do_backend_sync(self, o):
        if o["all"] == bool(o["name"]):
            raise Error("give a backend name or --all")
        while True:
            names = (
                selectors.backends_to_sync(user=self.principal).values_list("name", flat=True)
                if o["all"]
                else [o["name"]]
            )
            results = {}
            for name in names:
                try:
                    results[name] = services.backend_sync_now(name=name, actor=self.actor)
                except InventoryError as exc:
                    if not o["every"]:
                        raise
                    self.stderr.write(f"backend {name}: {exc}")
            self._sync_report(results, o["format"])
            if not o["every"]:
                return
            time.sleep(o["every"])

    def _sync_report(self, results, output_format):
        if output_format == "json":
            self.out(as_json({"backends": results}))
            return
        self.out(tables.SYNC_RESULTS.text([{"backend": name, **counts} for name, counts in results.items()]))

    @verb("backend list", "backend.list")
    def do_backend_list(self, o):
        rows = selectors.backend_health(user=self.principal)
        self.out(as_json({"backends": rows}) if o["format"] == "json" else tables.BACKENDS.text(rows))

    @verb("backend watch NAME", "backend.sync", name="name")
    def do_backend_watch(self, o):
        backend = Backend.objects.filter(name=o["name"]).first()
        if backend is None:
            raise Error(f"backend '{o['name']}' does not exist")
        stop = threading.Event()
        if o["seconds"]:
            threading.Timer(o["seconds"], stop.set).start()
        self.out(f"Watching backend {backend.name} (Ctrl-C stops)")
        try:
            services.backend_watch(
                backend=backend,
                stop=stop,
                owner=f"poolctl:{os.getpid()}",
                on_batch=lambda c: self.out(f"applied {c['nodes']} node and {c['pods']} pod changes"),
            )
        except KeyboardInterrupt:
            stop.set()

    @verb("node label NODE", "node.label", name="node", backend="backend")
    def do_node_label(self, o):
        key, sep, value = o["label"].partition("=")
        if not sep:
            raise Error(f"'{o['label']}' is not KEY=VALUE")
        change = services.node_label(
            node=o["node"], key=key, value=value, overwrite=o["overwrite"], backend=o["backend"], actor=self.actor
        )
        self.out(f"node/{change.node_name} labeled {change.key}={change.new_value}")

    @verb("node unlabel NODE", "node.label", name="node", backend="backend")
    def do_node_unlabel(self, o):
        change = services.node_label(node=o["node"], key=o["key"], value=None, backend=o["backend"], actor=self.actor)
        self.out(f"node/{change.node_name} unlabeled {change.key}")

    @verb("pool list", "pool.list")
    def do_pool_list(self, o):
        pools = selectors.pool_list(user=self.principal, filters=_filters(o, PoolFilterSet))
        self.out(as_json({"pools": pools}) if o["format"] == "json" else tables.POOLS.text(pools))

    @verb("pool render POOL", "pool.render", name="pool")
    def do_pool_render(self, o):
        result = selectors.pool_render(
            pool_name=o["pool"],
            platform=o["platform"],
            user_values=parse_assignments(o["assignments"]),
            user=self.principal,
        )
        self.out(as_json(result) if o["format"] == "json" else cli.render_text(result))

    @verb("pool check POOL", "pool.check", name="pool")
    def do_pool_check(self, o):
        result = selectors.pool_check(
            pool_name=o["pool"],
            platform=o["platform"],
            user_values=parse_assignments(o["assignments"]),
            user=self.principal,
            project=o["project"],
            pods=o["pods"],
            topology=(
                {"level": o["topology_level"], "required": o["topology_required"]} if o["topology_level"] else None
            ),
        )
        self.out(as_json(result) if o["format"] == "json" else cli.check_text(result))
        if not result["passed"]:
            sys.exit(1)

    @verb("pool capacity POOL", "pool.capacity", name="pool")
    def do_pool_capacity(self, o):
        result = selectors.pool_capacity(
            o["pool"], user=self.principal, shapes=o["shapes"], level=o["level"], gpu_product=o["gpu_product"]
        )
        self.out(as_json(result) if o["json"] else cli.capacity_text(result))

    @verb("resource list", "resource.list")
    def do_resource_list(self, o):
        rows = selectors.resource_list(user=self.principal, filters=_filters(o, NodeFilterSet))
        self.out(as_json({"resources": rows}) if o["format"] == "json" else tables.RESOURCES.text(rows))

    @verb("role set osmo-PREFIX pool", "role.generate")
    def do_role_set(self, o):
        self.report(services.pool_role_generate(name=o["name"], actor=self.actor))

    @verb("role check", "access.check")
    def do_role_check(self, o):
        roles = [name.strip() for name in o["roles"].split(",") if name.strip()]
        result = selectors.role_check(roles=roles, action=o["action"], resource=o["resource"])
        self.out(as_json(result) if o["format"] == "json" else cli.role_check_text(result))

    # gpuctl (SEMANTICS §8.1) ------------------------------------------------------------------------------

    @verb("create -f FILE", "label_pool.create")
    def do_create_file(self, o):
        result = services.label_pool_apply(
            document=gpuctl_file_parse(read_document(o["file"])),
            actor=self.actor,
            backend=o["backend"],
            overwrite=o["overwrite"],
        )
        self.out(
            f"pool/{result['pool']} created on backend {result['backend']}: "
            f"{len(result['labelled'])} node(s) labelled, {len(result['unchanged'])} already labelled"
        )

    @verb("delete -f FILE", "label_pool.delete")
    def do_delete_file(self, o):
        if not o["file"]:
            raise Error("give 'pool NAME' or -f FILE")
        self._delete_pool(gpuctl_file_parse(read_document(o["file"]))["name"], o["force"])

    @verb("delete pool NAME", "label_pool.delete", name="name")
    def do_delete_pool(self, o):
        if o["file"]:
            raise Error("give either 'pool NAME' or -f FILE, not both")
        self._delete_pool(o["name"], o["force"])

    def _delete_pool(self, name, force):
        result = services.label_pool_delete(name=name, actor=self.actor, force=force)
        if result["workloads"]:
            self.stderr.write(
                f"warning: {len(result['workloads'])} workload(s) still run on the pool's nodes (not terminated)"
            )
        self.out(f"pool/{name} deleted: label removed from {len(result['unlabelled'])} node(s)")

    @verb("get pools", "gpuctl.pools")
    def do_get_pools(self, o):
        pools = selectors.gpuctl_pools(user=self.principal)
        self.out(as_json({"pools": pools}) if o["json"] else tables.GPUCTL_POOLS.text(pools))

    @verb("get nodes", "node.list")
    def do_get_nodes(self, o):
        nodes = selectors.gpuctl_nodes(user=self.principal, pool=o["pool"], gpu_type=o["gpu_type"])
        self.out(as_json({"nodes": nodes}) if o["json"] else tables.GPUCTL_NODES.text(nodes))

    @verb("get labels NODE", "node.get", name="name", backend="backend")
    def do_get_labels(self, o):
        result = selectors.node_labels(o["name"], user=self.principal, key=o["key"], backend=o["backend"])
        self.out(as_json(result) if o["json"] else cli.node_labels_text({**result, "key": o["key"]}))

    @verb("get idle", "idle.list")
    def do_get_idle(self, o):
        rows = selectors.idle_workloads(user=self.principal, filters=_filters(o, IdleGpuFilterSet))
        self.out(as_json(rows) if o["json"] else tables.IDLE.text(rows))

    @verb("get workloads", "workload.list")
    def do_get_workloads(self, o):
        filters = {
            name: o[f"filter_{name}"]
            for name in ("pool", "project", "user", "phase", "reason", "backend", "namespace")
            if o[f"filter_{name}"]
        }
        if o["pending"]:
            filters["pending"] = "1"
        rows = list(selectors.workloads_visible(user=self.principal, filters=filters))
        self.out(as_json({"workloads": rows}) if o["json"] else tables.WORKLOADS.text(rows))

    @verb("describe workload NAMESPACE/NAME", "workload.get")
    def do_describe_workload(self, o):
        namespace, slash, name = o["name"].partition("/")
        if not slash or not namespace or not name:
            raise Error(f"'{o['name']}' is not NAMESPACE/NAME")
        workload = selectors.workload_get(user=self.principal, backend=o["backend"], namespace=namespace, name=name)
        self.out(as_json(workload) if o["json"] else workload_text(workload))

    @verb("get consumption", "consumption.report")
    def do_get_consumption(self, o):
        filters = {name: o[f"filter_{name}"] for name in CONSUMPTION_OPTIONS if o[f"filter_{name}"]}
        report = selectors.consumption_report(user=self.principal, filters=filters)
        self.out(as_json(report) if o["json"] else cli.consumption_text(report))

    @verb("describe pool NAME", "gpuctl.pool", name="name")
    def do_describe_pool(self, o):
        pool = selectors.gpuctl_pool_detail(o["name"], user=self.principal)
        self.out(as_json(pool) if o["json"] else cli.gpuctl_pool_detail_text(pool))

    @verb("describe node NODE", "node.get", name="name", backend="backend")
    def do_describe_node(self, o):
        node = selectors.gpuctl_node_detail(o["name"], user=self.principal, backend=o["backend"])
        self.out(as_json(node) if o["json"] else cli.gpuctl_node_detail_text(node))

    @verb("label node NODE", "node.label", name="name", backend="backend")
    def do_label_node(self, o):
        key, sep, value = o["label"].partition("=")
        if o["delete"]:
            if sep:
                raise Error("--delete takes a KEY, not KEY=VALUE")
            change = services.node_label(node=o["name"], key=key, value=None, backend=o["backend"], actor=self.actor)
            self.out(f"node/{change.node_name} unlabeled {change.key}")
            return
        if not sep:
            raise Error(f"'{o['label']}' is not KEY=VALUE (use --delete to remove the label KEY)")
        change = services.node_label(
            node=o["name"], key=key, value=value, overwrite=o["overwrite"], backend=o["backend"], actor=self.actor
        )
        self.out(f"node/{change.node_name} labeled {change.key}={change.new_value}")

    # quotas -----------------------------------------------------------------------------------------------

    @verb("department create", "unit.create")
    def do_department_create(self, o):
        resources = [parse_quota_spec(spec) for spec in o["resources"]]
        self.report(
            services.department_create(
                name=o["name"],
                description=o["description"],
                resources=resources,
                members=[parse_member_spec(spec) for spec in o["members"]],
                actor=self.actor,
            )
        )

    @verb("department members NAME", "department.change", name="name")
    def do_department_members(self, o):
        members = [parse_member_spec(spec) for spec in o["members"]]
        self.report(services.unit_members_set(kind="department", name=o["name"], members=members, actor=self.actor))

    @verb("department list", "unit.departments")
    def do_department_list(self, o):
        departments = selectors.department_table(user=self.principal)
        self.out(as_json({"departments": departments}) if o["json"] else tables.DEPARTMENTS.text(departments))

    @verb("project create", "unit.create")
    def do_project_create(self, o):
        resources = [parse_quota_spec(spec) for spec in o["resources"]]
        self.report(
            services.project_create(
                name=o["name"],
                department=o["department"],
                namespaces=o["namespaces"],
                description=o["description"],
                resources=resources,
                members=[parse_member_spec(spec) for spec in o["members"]],
                actor=self.actor,
            )
        )

    @verb("project members NAME", "project.change", name="name")
    def do_project_members(self, o):
        members = [parse_member_spec(spec) for spec in o["members"]]
        self.report(services.unit_members_set(kind="project", name=o["name"], members=members, actor=self.actor))

    @verb("my projects", "my.projects")
    def do_my_projects(self, o):
        units = selectors.my_projects(user=self.principal)
        self.out(as_json({"units": units}) if o["json"] else cli.my_projects_text(units))

    @verb("project list", "unit.projects")
    def do_project_list(self, o):
        projects = selectors.project_table(user=self.principal, department=o["department"])
        self.out(as_json({"projects": projects}) if o["json"] else tables.PROJECTS.text(projects))

    @verb("quota list", "quota.list")
    def do_quota_list(self, o):
        what_if = selectors.fair_share_what_if(o["k_value"], o["window"], o["half_life"])
        report = selectors.quota_report(user=self.principal, pool=o["pool"], what_if=what_if)
        table = tables.QUOTAS if what_if is None else tables.QUOTAS_WHAT_IF
        self.out(as_json(report) if o["json"] else table.text(report["quotas"]))
        for warning in [] if o["json"] else report["warnings"]:
            self.stderr.write(f"warning: {warning}")

    @verb("quota set UNIT --pool P", "quota.change")
    def do_quota_set(self, o):
        words = {"priority": o["priority"]} | {
            key: o[key.replace("-", "_")] for key in QUOTA_SPEC_KEYS if key.replace("-", "_") in o
        }
        spec = ",".join([f"nodepool={o['pool']}", *(f"{key}={value}" for key, value in words.items() if value)])
        figures = parse_quota_spec(spec)
        figures.pop("nodePool")
        if not figures:
            raise Error("give at least one figure to set (--gpu-deserved, --gpu-limit, --over-quota-weight, ...)")
        self.report(
            services.quota_set(
                unit=o["unit"], pool=o["pool"], figures=figures, actor=self.actor, description=o["description"]
            )
        )

    @verb("quota simulate --file F", "quota.simulate")
    def do_quota_simulate(self, o):
        document = read_document(o["file"])
        result = selectors.quota_simulate(document)
        self.out(as_json(result) if o["json"] else cli.quota_simulation_text(document, result))

    @verb("quota reclaim --file F", "quota.reclaim")
    def do_quota_reclaim(self, o):
        result = selectors.quota_reclaim(read_document(o["file"]))
        self.out(as_json(result) if o["json"] else cli.quota_reclaim_text(result))

    # access / token -------------------------------------------------------------------------------------

    @verb("access explain", "access.check")
    def do_access_explain(self, o):
        result = access_selectors.access_explain(username=o["subject"], action=o["action"], resource=o["resource"])
        self.out(as_json(result) if o["format"] == "json" else cli.access_explain_text(result))

    @verb("access doors", "api.schema")
    def do_access_doors(self, o):
        self.out(pool_doors.markdown([*pool_doors.http_doors(), *cli_doors()]))

    @verb("access sync", "access.sync")
    def do_access_sync(self, o):
        counts = services.pool_permissions_sync()
        self.out(f"pool permissions: {counts['added']} added, {counts['removed']} removed")

    @verb("token create --user NAME", "user.token", username="subject")
    def do_token_create(self, o):
        try:
            lifetime = parse_lifetime(o["expires"])
        except ValueError as exc:
            raise Error(str(exc)) from None
        token, secret = access_services.api_token_create_for(
            username=o["subject"], name=o["name"], lifetime=lifetime, principal=self.principal
        )
        self.stderr.write(f"token {token.name} for {o['subject']}, expires {token.expires_at:%Y-%m-%d %H:%M} UTC")
        self.out(secret)

    @verb("user create NAME", "user.create", username="name")
    def do_user_create(self, o):
        user = access_services.user_create(
            principal=self.principal,
            username=o["name"],
            service_account=o["service_account"],
            roles=_names(o["roles"]),
            email=o["email"],
            description=o["description"],
        )
        kind = "service account" if o["service_account"] else "user"
        roles = ", ".join(sorted(user.groups.values_list("name", flat=True))) or "no roles"
        self.out(f"{kind} {user.username} created ({roles})")

    @verb("user set-roles NAME", "user.roles", username="name")
    def do_user_set_roles(self, o):
        roles = access_services.user_roles_set(principal=self.principal, username=o["name"], roles=_names(o["roles"]))
        self.out(f"user {o['name']} holds {', '.join(sorted(roles)) or 'no roles'}")

    @verb("user list", "user.list")
    def do_user_list(self, o):
        users = access_selectors.users_visible(principal=self.principal)
        self.out(as_json({"users": users}) if o["format"] == "json" else tables.USERS.text(users))


def _names(text: str) -> list[str]:
    """``a,b, c`` as names; empty text is no names."""
    return [name.strip() for name in text.split(",") if name.strip()]


def cli_doors() -> list[pool_doors.Entry]:
    """Every ``poolctl`` verb with the door it goes through (``poolctl access doors``)."""
    verbs = [
        method.verb for name, method in vars(Command).items() if name.startswith("do_") and hasattr(method, "verb")
    ]
    return [pool_doors.Entry(f"poolctl {verb.shown}", door(verb.door)) for verb in verbs]


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "cli"
