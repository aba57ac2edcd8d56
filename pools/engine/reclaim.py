"""Reclaim, as KAI Scheduler's proportion plugin decides it (SEMANTICS §9.2): may a pending job take GPUs back from
preemptible running jobs of other units, and are the jobs it names (the victims) reclaimable?

Two separate answers, as KAI's two checks are separate:

- ``can_reclaim``: the reclaimer's unit stays within its fair share with the request (``allocated + request ≤
  fair_share``); for a non-preemptible job also within its deserved (``allocated_nonpreemptible + request ≤
  deserved``).
- ``reclaimable``: each victim, in order, passes *keep fair share* or *guarantee deserved* on its leveled pair (the
  two units just below the lowest common ancestor of the reclaimer's unit and the victim's), and is then removed from
  its unit and every ancestor; afterwards *saturation* holds from the reclaimer's unit up to the top against every
  sibling that lost GPUs, and a non-preemptible job stays within the deserved of every level.

Where §9.2 leaves a point open:

- Jobs run in leaf units (projects): the reclaimer's unit and every victim's must have no children, and a victim
  may not run in the reclaimer's own unit (the leveled pair is undefined there; taking GPUs back inside one unit is
  preemption, not reclaim). Both are refused as bad input.
- A parent's ``allocated`` and ``allocated_nonpreemptible`` are the sums of its children's, as the simulator takes a
  parent's request (a parent's own figures are ignored).
- The victims of a unit are its preemptible jobs, so together they hold at most ``allocated −
  allocated_nonpreemptible`` of it; more is refused as bad input.
- Each check sees the figures after the earlier victims were removed, on both sides of the pair.
- The first victim that fails its pair ends the check (as KAI stops), and so does the first refusal of saturation.
- Siblings that lost GPUs are compared in name order, so the answer does not depend on the order of the queues.

Numbers are read as the simulator reads them (``pools.engine.fairshare``): exact rationals from 0 to 10^15 (or -1
where it means unlimited). The input is bounded: at most ``MAX_QUEUES`` units, ``MAX_DEPTH`` levels and
``MAX_VICTIMS`` victims, so the work is at most victims × levels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import NamedTuple

from .errors import ConfigError, Problem
from .fairshare import MAX_QUEUES, Number, _read, json_number

MAX_DEPTH = 64
MAX_VICTIMS = 10_000

UNIT_FIELDS = ("name", "parent", "deserved", "limit", "fair_share", "allocated", "allocated_nonpreemptible")
RECLAIMER_FIELDS = ("queue", "gpus", "preemptible")
DOCUMENT_FIELDS = ("queues", "reclaimer", "victims", "multiplier")

UNLIMITED = math.inf


class Unit(NamedTuple):
    """A department or a project with its GPU figures in one pool (-1 = unlimited for the first three)."""

    name: str
    parent: str | None = None
    deserved: Number = 0
    limit: Number = -1
    fair_share: Number = 0
    allocated: Number = 0
    allocated_nonpreemptible: Number = 0


class Reclaimer(NamedTuple):
    """The pending job: its unit, the GPUs it asks for, and whether it may itself be preempted."""

    queue: str
    gpus: Number
    preemptible: bool = True


class Verdict(NamedTuple):
    """The two answers and their reasons, one sentence per decision, with the figures.

    ``refused_by`` says which check made the victims unreclaimable (``"leveled pair"``, ``"saturation"``,
    ``"non-preemptible"``) or is None; ``allocated`` is every unit's allocation after the victims that were removed.
    """

    can_reclaim: bool
    reclaimable: bool
    reasons: list[str]
    refused_by: str | None
    allocated: dict[str, Fraction]


def reclaim_verdict(
    units: Iterable[Unit],
    reclaimer: Reclaimer,
    victims: Sequence[tuple[str, Number]],
    multiplier: Number = 1,
) -> Verdict:
    """Decide ``can_reclaim`` and ``reclaimable`` as SEMANTICS §9.2 says, without touching anything.

    Raises ``ConfigError`` (paths ``queues[i].field``, ``reclaimer.field``, ``victims[i]``, ``multiplier``) for a
    number that is not allowed, an unknown unit, a cycle, a tree too deep, or victims a unit cannot hold.
    """
    return _Reclaim(list(units), reclaimer, list(victims), multiplier).decide()


def reclaim(document: Mapping) -> dict:
    """The what-if door: ``{"queues", "reclaimer", "victims", "multiplier"}`` in, ``{"can_reclaim", "reclaimable",
    "reasons"}`` out. Anything wrong raises ``ConfigError`` listing every problem found; nothing else is raised."""
    if not isinstance(document, Mapping):
        raise ConfigError([Problem("", 'must be a JSON object with "queues", "reclaimer" and "victims"')])
    problems = [
        Problem(str(key), f"unknown field; expected one of {', '.join(DOCUMENT_FIELDS)}")
        for key in document
        if key not in DOCUMENT_FIELDS
    ]
    units = _objects(document, "queues", UNIT_FIELDS, "name", problems, MAX_QUEUES)
    reclaimer = None
    item = document.get("reclaimer")
    if not isinstance(item, Mapping):
        problems.append(Problem("reclaimer", "is required" if item is None else 'must be {"queue", "gpus"}'))
    else:
        problems.extend(
            Problem(f"reclaimer.{key}", f"unknown field; expected one of {', '.join(RECLAIMER_FIELDS)}")
            for key in item
            if key not in RECLAIMER_FIELDS
        )
        problems.extend(Problem(f"reclaimer.{key}", "is required") for key in ("queue", "gpus") if key not in item)
        if "queue" in item and "gpus" in item:
            reclaimer = Reclaimer(**{key: item[key] for key in RECLAIMER_FIELDS if key in item})
    victims = document.get("victims", [])
    if not isinstance(victims, list):
        problems.append(Problem("victims", 'must be a list of ["queue", gpus]'))
        victims = []
    elif len(victims) > MAX_VICTIMS:
        raise ConfigError([Problem("victims", f"has {len(victims)} victims; at most {MAX_VICTIMS:,} are accepted")])
    pairs = []
    for index, victim in enumerate(victims):
        if isinstance(victim, list) and len(victim) == 2:
            pairs.append((victim[0], victim[1]))
        else:
            problems.append(Problem(f"victims[{index}]", 'must be ["queue", gpus]'))
    if problems or reclaimer is None:
        raise ConfigError(problems)
    verdict = reclaim_verdict(units, reclaimer, pairs, document.get("multiplier", 1))
    return {"can_reclaim": verdict.can_reclaim, "reclaimable": verdict.reclaimable, "reasons": verdict.reasons}


def _objects(document, key, fields, required, problems, most) -> list:
    items = document.get(key)
    if not isinstance(items, list):
        problems.append(Problem(key, "is required" if items is None else "must be a list"))
        return []
    if len(items) > most:
        raise ConfigError([Problem(key, f"has {len(items)} items; at most {most:,} are accepted")])
    units = []
    for index, item in enumerate(items):
        where = f"{key}[{index}]"
        if not isinstance(item, Mapping):
            problems.append(Problem(where, "must be a JSON object"))
            continue
        problems.extend(
            Problem(f"{where}.{name}", f"unknown field; expected one of {', '.join(fields)}")
            for name in item
            if name not in fields
        )
        if required not in item:
            problems.append(Problem(f"{where}.{required}", "is required"))
            continue
        units.append(Unit(**{name: item[name] for name in fields if name in item}))
    return units


def _unlimited(value):
    return UNLIMITED if value == -1 else value


def _text(value) -> str:
    """A figure in a sentence: ``unlimited``, a whole number, or a decimal."""
    if value == UNLIMITED:
        return "unlimited"
    return str(json_number(Fraction(value)))


def _ratio_text(value) -> str:
    return "∞" if value == UNLIMITED else f"{float(value):.4g}"


def _ratio(allocated, fair_share):
    """``allocated / fair_share`` as §9.2 defines it: 0 for an unlimited fair share, +∞ over a fair share of 0."""
    if fair_share == UNLIMITED:
        return 0
    if fair_share == 0:
        return UNLIMITED if allocated > 0 else 0
    return Fraction(allocated) / Fraction(fair_share)


class _Reclaim:
    """The units as lists indexed by position, checked; then the decision on a working copy of the allocations."""

    def __init__(self, units: list[Unit], reclaimer: Reclaimer, victims: list, multiplier):
        if len(units) > MAX_QUEUES:
            raise ConfigError([Problem("queues", f"has {len(units)} units; at most {MAX_QUEUES:,} are accepted")])
        if len(victims) > MAX_VICTIMS:
            raise ConfigError([Problem("victims", f"has {len(victims)} victims; at most {MAX_VICTIMS:,} are accepted")])
        problems: list[Problem] = []
        self.problems = problems
        self.names = [unit.name for unit in units]
        self.index_of: dict[str, int] = {}
        for index, name in enumerate(self.names):
            if type(name) is not str or not name:
                problems.append(Problem(f"queues[{index}].name", "must be a non-empty string"))
            elif name in self.index_of:
                problems.append(Problem(f"queues[{index}].name", f"'{name}' is already queues[{self.index_of[name]}]"))
            else:
                self.index_of[name] = index

        def column(field, *, minus_one=False):
            values = [
                _read(getattr(unit, field), f"queues[{index}].{field}", problems, minus_one=minus_one)
                for index, unit in enumerate(units)
            ]
            return [_unlimited(value) for value in values] if minus_one else values

        self.deserved = column("deserved", minus_one=True)
        self.limit = column("limit", minus_one=True)
        self.fair_share = column("fair_share", minus_one=True)
        allocated = column("allocated")
        nonpreemptible = column("allocated_nonpreemptible")
        self.parents = self._parents(units)
        self.depths = self._depths()
        leaves = set(range(len(units))) - set(self.parents)
        for index in leaves:
            if None not in (allocated[index], nonpreemptible[index]) and nonpreemptible[index] > allocated[index]:
                problems.append(
                    Problem(f"queues[{index}].allocated_nonpreemptible", "is more than the unit's allocated")
                )
        self.request = _read(reclaimer.gpus, "reclaimer.gpus", problems)
        if self.request == 0:
            problems.append(Problem("reclaimer.gpus", "must be more than 0"))
        if type(reclaimer.preemptible) is not bool:
            problems.append(Problem("reclaimer.preemptible", "must be true or false"))
        self.preemptible = reclaimer.preemptible
        self.unit = self._leaf(reclaimer.queue, "reclaimer.queue", leaves)
        multiplier = _read(multiplier, "multiplier", problems)
        self.multiplier = max(1, multiplier) if multiplier is not None else 1
        self.victims = []
        for index, (name, gpus) in enumerate(victims):
            where = f"victims[{index}]"
            unit = self._leaf(name, where, leaves)
            if unit is not None and unit == self.unit:
                problems.append(
                    Problem(
                        where, f"'{name}' is the reclaimer's own unit: taking GPUs back inside a unit is not reclaim"
                    )
                )
            amount = _read(gpus, where, problems)
            if amount == 0:
                problems.append(Problem(where, "a victim's GPUs must be more than 0"))
            self.victims.append((unit, amount))
        if problems:
            raise ConfigError(problems)
        taken: dict[int, Fraction | None] = {}  # None: said once
        for index, (unit, gpus) in enumerate(self.victims):
            said = taken.get(unit, 0) is None
            taken[unit] = None if said else taken.get(unit, 0) + gpus
            preemptible = allocated[unit] - nonpreemptible[unit]
            if not said and taken[unit] > preemptible:
                problems.append(
                    Problem(
                        f"victims[{index}]",
                        f"the victims of '{self.names[unit]}' hold {_text(taken[unit])} GPUs, more than its "
                        f"{_text(preemptible)} GPUs of preemptible jobs",
                    )
                )
                taken[unit] = None
        if problems:
            raise ConfigError(problems)
        # A parent's figures are its children's sums, bottom-up.
        for index in range(len(units)):
            if index not in leaves:
                allocated[index] = nonpreemptible[index] = 0
        for index in sorted(range(len(units)), key=self.depths.__getitem__, reverse=True):
            parent = self.parents[index]
            if parent is not None:
                allocated[parent] += allocated[index]
                nonpreemptible[parent] += nonpreemptible[index]
        self.allocated, self.nonpreemptible = allocated, nonpreemptible

    def _parents(self, units: list[Unit]) -> list[int | None]:
        parents = []
        for index, unit in enumerate(units):
            parent = unit.parent
            if parent is not None and (type(parent) is not str or parent not in self.index_of):
                message = f"no queue is named '{parent}'" if type(parent) is str else "must be a queue name or null"
                self.problems.append(Problem(f"queues[{index}].parent", message))
                parent = None
            parents.append(None if parent is None else self.index_of[parent])
        return parents

    def _depths(self) -> list[int]:
        """Each unit's depth (0 at the top); a cycle or a tree deeper than ``MAX_DEPTH`` is a problem."""
        parents = self.parents
        depths: list[int | None] = [None] * len(parents)
        on_walk = [False] * len(parents)
        too_deep = False
        for start in range(len(parents)):
            walk = []
            node = start
            while node is not None and depths[node] is None and not on_walk[node]:
                on_walk[node] = True
                walk.append(node)
                node = parents[node]
            if node is not None and on_walk[node] and depths[node] is None:
                cycle = walk[walk.index(node) :]
                path = " → ".join(self.names[member] for member in [*cycle, node])
                self.problems.append(Problem(f"queues[{node}].parent", f"the parents form a cycle: {path}"))
                depth = 0  # not used: the problem is raised
            else:
                depth = -1 if node is None else depths[node]
            for member in reversed(walk):
                depth += 1
                depths[member] = depth
                if depth >= MAX_DEPTH and not too_deep:
                    too_deep = True
                    self.problems.append(
                        Problem(f"queues[{member}].parent", f"the tree is deeper than {MAX_DEPTH} levels")
                    )
        return depths

    def _leaf(self, name, where: str, leaves: set[int]) -> int | None:
        if type(name) is not str or name not in self.index_of:
            self.problems.append(Problem(where, f"no queue is named '{name}'"))
            return None
        index = self.index_of[name]
        if index not in leaves:
            self.problems.append(Problem(where, f"'{name}' has units below it: jobs run in units with none"))
        return index

    # --- the decision ------------------------------------------------------------------------------------------

    def path(self, node: int) -> list[int]:
        """``node`` and its ancestors, up to the top."""
        path = []
        while node is not None:
            path.append(node)
            node = self.parents[node]
        return path

    def decide(self) -> Verdict:
        reasons: list[str] = []
        can_reclaim = self.can_reclaim(reasons)
        given = list(self.allocated)
        refused_by = (
            self.leveled_pairs(reasons) or self.saturation(given, reasons) or self.nonpreemptible_levels(reasons)
        )
        allocated = dict(zip(self.names, map(Fraction, self.allocated), strict=True))
        return Verdict(can_reclaim, refused_by is None, reasons, refused_by, allocated)

    def can_reclaim(self, reasons: list[str]) -> bool:
        unit, request = self.unit, self.request
        name, total = self.names[unit], self.allocated[unit] + self.request
        ok = total <= self.fair_share[unit]
        reasons.append(
            f"{name} {'may' if ok else 'may not'} start a reclaim: allocated {_text(self.allocated[unit])} + request "
            f"{_text(request)} = {_text(total)} {'≤' if ok else '>'} fair share {_text(self.fair_share[unit])}."
        )
        if self.preemptible:
            return ok
        total = self.nonpreemptible[unit] + request
        held = total <= self.deserved[unit]
        reasons.append(
            f"As the job is non-preemptible, {name} also needs allocated_nonpreemptible "
            f"{_text(self.nonpreemptible[unit])} + request {_text(request)} = {_text(total)} ≤ deserved "
            f"{_text(self.deserved[unit])}: {'it holds' if held else 'it does not'}."
        )
        return ok and held

    def allocatable(self, node: int):
        """``max(deserved, fair_share)`` capped by the limit; with a deserved of -1, the limit."""
        if self.deserved[node] == UNLIMITED:
            return self.limit[node]
        return min(max(self.deserved[node], self.fair_share[node]), self.limit[node])

    def leveled_pairs(self, reasons: list[str]) -> str | None:
        """Step 1: each victim in order passes keep fair share or guarantee deserved, then is removed."""
        reclaimer_path = self.path(self.unit)
        level_of = {node: level for level, node in enumerate(reclaimer_path)}
        names, allocated, request = self.names, self.allocated, self.request
        for number, (victim, gpus) in enumerate(self.victims, 1):
            victim_path = self.path(victim)
            below = next((position for position, node in enumerate(victim_path) if node in level_of), len(victim_path))
            ours = reclaimer_path[level_of[victim_path[below]] - 1] if below < len(victim_path) else reclaimer_path[-1]
            theirs = victim_path[below - 1]
            mine, yours = names[ours], names[theirs]
            head = f"Victim {number} ({_text(gpus)} GPUs of {names[victim]}), leveled pair {mine} / {yours}:"
            allocatable = self.allocatable(theirs)
            keep = allocated[theirs] > allocatable
            total = allocated[ours] + request
            guarantee = total <= self.deserved[ours] and allocated[theirs] > self.deserved[theirs]
            keep_text = f"{yours} allocated {_text(allocated[theirs])} > allocatable {_text(allocatable)}"
            guarantee_text = (
                f"{mine} allocated {_text(allocated[ours])} + request {_text(request)} = {_text(total)} ≤ deserved "
                f"{_text(self.deserved[ours])} and {yours} allocated {_text(allocated[theirs])} > deserved "
                f"{_text(self.deserved[theirs])}"
            )
            if keep:
                reasons.append(f"{head} keep fair share holds: {keep_text}.")
            elif guarantee:
                reasons.append(f"{head} guarantee deserved holds: {guarantee_text}.")
            else:
                reasons.append(
                    f"{head} not reclaimable: keep fair share needs {keep_text}, and guarantee deserved needs "
                    f"{guarantee_text}; neither holds."
                )
                return "leveled pair"
            for node in victim_path:
                allocated[node] -= gpus
        return None

    def saturation(self, given: list, reasons: list[str]) -> str | None:
        """Step 2: from the reclaimer's unit up, its ratio with the request against each sibling that lost GPUs."""
        names, allocated, fair_share = self.names, self.allocated, self.fair_share
        lost: dict[int | None, list[int]] = {}
        for node in sorted(range(len(names)), key=names.__getitem__):
            if allocated[node] < given[node]:
                lost.setdefault(self.parents[node], []).append(node)
        compared = False
        for node in self.path(self.unit):
            siblings = [sibling for sibling in lost.get(self.parents[node], []) if sibling != node]
            total = allocated[node] + self.request
            ratio = _ratio(total, fair_share[node])
            for sibling in siblings:
                compared = True
                theirs = _ratio(allocated[sibling], fair_share[sibling])
                head = (
                    f"Saturation of {names[node]} against {names[sibling]}: {names[node]}'s ratio "
                    f"({_text(allocated[node])} + {_text(self.request)}) / {_text(fair_share[node])} = "
                    f"{_ratio_text(ratio)}, {names[sibling]}'s {_text(allocated[sibling])} / "
                    f"{_text(fair_share[sibling])} = {_ratio_text(theirs)}"
                )
                if ratio <= 1:
                    reasons.append(f"{head}; passes, as {names[node]}'s ratio is at most 1.")
                elif fair_share[sibling] in (0, UNLIMITED):
                    which = "0" if fair_share[sibling] == 0 else "unlimited"
                    reasons.append(f"{head}; passes, as {names[sibling]}'s fair share is {which}.")
                elif ratio * self.multiplier >= theirs:
                    reasons.append(
                        f"{head}; not reclaimable: {_ratio_text(ratio)} > 1 and {_ratio_text(ratio)} × multiplier "
                        f"{_text(self.multiplier)} ≥ {_ratio_text(theirs)}."
                    )
                    return "saturation"
                else:
                    reasons.append(
                        f"{head}; passes, as {_ratio_text(ratio)} × multiplier {_text(self.multiplier)} < "
                        f"{_ratio_text(theirs)}."
                    )
        if not compared:
            reasons.append(f"Saturation: no sibling of {names[self.unit]} or of its ancestors lost GPUs.")
        return None

    def nonpreemptible_levels(self, reasons: list[str]) -> str | None:
        """For a non-preemptible job: ``allocated_nonpreemptible + request ≤ deserved`` at every level."""
        if self.preemptible:
            return None
        path = self.path(self.unit)
        for node in path:
            total = self.nonpreemptible[node] + self.request
            if total > self.deserved[node]:
                reasons.append(
                    f"Non-preemptible at {self.names[node]}: allocated_nonpreemptible "
                    f"{_text(self.nonpreemptible[node])} + request {_text(self.request)} = {_text(total)} > deserved "
                    f"{_text(self.deserved[node])}; not reclaimable."
                )
                return "non-preemptible"
        levels = ", ".join(self.names[node] for node in path)
        reasons.append(f"Non-preemptible: allocated_nonpreemptible + request is within deserved at {levels}.")
        return None
