"""Fair share of a pool's GPUs between departments and projects, as KAI Scheduler computes it (SEMANTICS §9.1).

Departments divide the pool's capacity; each one's fair share is then divided among its projects, and so on down
a tree of any depth, always among siblings only, with the same four steps:

1. ``requestable`` = the request capped by the limit (unless -1). A parent's request is the sum of its children's.
2. Deserved phase, priority ignored: each gets ``min(deserved, requestable)``, even past the amount (over-subscription).
3. Over-quota phase, by priority group (highest first), in rounds: each unsatisfied member with weight ``w > 0`` is
   offered ``R × w / W``; one whose missing amount fits takes exactly it, any other takes whole GPUs and notes the
   fraction it lost. Another round only when someone took less than its offer and something remains.
4. Leftover: group by group, members with a noted fraction (largest first, then created first, then name) take
   ``min(1, what is left)`` once.

Arithmetic is exact, with ``fractions.Fraction`` semantics: every input number is read as a rational (a float by
its shortest decimal form, so ``0.1`` is 1/10, a Decimal as it is) and, for the computation, as an integer count
of ``1/D`` GPU, ``D`` being the least common multiple of every amount's denominator (1 for whole GPUs, 10 or 100
for decimals). An offer ``R × w / W`` is never rounded: it is compared with cross-multiplication and floored with
``divmod``. Every share is then a whole count of ``1/D`` (each step gives a missing amount, whole GPUs or
``min(1, what is left)``), so decimal inputs give decimal shares, and a 1/3 split is the same on every run and
machine: 1 GPU among three equal members is 0 + 0 + 0 whole GPUs, then the leftover GPU to the one created first.
Results are ``Fraction``s; ``json_number`` renders one for JSON (an int when whole, else the nearest float).

Where §9.1 leaves a point open (KAI's own code decides the same way):

- A member's noted fraction is the one of the latest round in which it lost a non-zero fraction (not a sum over
  rounds), and a member satisfied in a later round has none.
- The leftover step may give a member up to one GPU beyond its requestable: it is the only step that can.
- A weight of None caps the requestable at the deserved part as well (limit = deserved), on top of any limit.
- A group of a single member gets no more than its requestable (KAI's code hands such a member the whole remainder;
  §9.1 has no such exception).
- A parent's request is the sum of its children's requests as given (§9: "a department's is its projects' sum"),
  not of their limit-capped requestables; a parent's own ``request`` is ignored.
- Ties in the leftover step go by ``creation_order`` (the position in the input when absent), then by name, so
  the result never depends on the order of the input when every creation order is given.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from itertools import groupby
from numbers import Rational
from operator import attrgetter
from typing import NamedTuple

from .errors import ConfigError, Problem

Number = int | float | Decimal | Fraction

MAX_QUEUES = 100_000
# Bounds that keep the exact integers small: no GPU count is near 10^15, no share needs 18 decimal places.
MAX_MAGNITUDE = 10**15
MAX_DENOMINATOR = 10**18

QUEUE_FIELDS = (
    "name", "parent", "deserved", "limit", "over_quota_weight", "priority", "request", "creation_order", "usage"
)  # fmt: skip


class Queue(NamedTuple):
    """A department or a project, with its figures in one pool.

    ``deserved`` -1 means the whole amount being divided; ``limit`` -1 unlimited, 0 nothing; ``over_quota_weight``
    None means no over-quota (limit = deserved); ``priority`` ranks siblings, higher first; ``request`` is ignored
    for a queue that has children (their sum is used); ``creation_order`` defaults to the position in the input;
    ``usage`` (0 to 1) is its past usage, which only a ``k_value`` above 0 reads (SEMANTICS §9.3).

    An immutable record, and a cheap one to build: ``quota_figures`` builds one per unit and pool, 11,000 for 550
    units on 20 pools (a frozen dataclass took five times as long).
    """

    name: str
    parent: str | None = None
    deserved: Number = 0
    limit: Number = -1
    over_quota_weight: Number | None = 2
    priority: int = 100
    request: Number = 0
    creation_order: int | None = None
    usage: Number = 0


def fair_shares(capacity: Number, queues: Iterable[Queue], *, k_value: Number = 0) -> dict[str, Fraction]:
    """Return every queue's fair share of ``capacity`` GPUs, exactly, by name in input order.

    With ``k_value`` above 0, time-based fair share (SEMANTICS §9.3): in every over-quota round a member's offer is
    ``R × s / Σs`` over the round's members, ``s = max(0, nW + k × (nW − usage))`` with ``nW = w / Σw``; ``k ≤ 0``
    is §9.1 exactly, and so is zero usage everywhere. When every member of a round has ``s`` 0, the rest stays with
    the next priority group.

    Raises ``ConfigError`` (with one ``Problem`` per thing wrong, paths ``capacity``, ``k_value`` and
    ``queues[i].field``) for a value that is not an allowed number, a duplicate name, an unknown parent or a cycle.
    """
    tree = _Tree(capacity, list(queues), k_value=k_value)
    return tree.divide()


def simulate(document: Mapping) -> dict:
    """KAI's fair-share simulator: ``{"capacity", "queues": [...]}`` in, ``{"fair_share": {name: number}}`` out.

    Each queue is an object with the fields of ``Queue``; only ``name`` is required, the others default as in
    ``Queue`` (``parent`` null = top level; ``over_quota_weight`` null = no over-quota). Values are JSON numbers
    (ints or floats). Anything wrong raises ``ConfigError`` listing every problem; nothing else is raised.
    """
    if not isinstance(document, Mapping):
        raise ConfigError([Problem("", 'must be a JSON object with "capacity" and "queues"')])
    problems = [
        Problem(str(key), 'unknown field; expected one of "capacity", "queues", "k_value"')
        for key in document
        if key not in ("capacity", "queues", "k_value")
    ]
    k_value = document.get("k_value", 0)
    if "capacity" not in document:
        problems.append(Problem("capacity", "is required"))
    items = document.get("queues")
    if not isinstance(items, list):
        problems.append(Problem("queues", "is required" if items is None else "must be a list of queues"))
        items = []
    elif len(items) > MAX_QUEUES:
        raise ConfigError([Problem("queues", f"has {len(items)} queues; at most {MAX_QUEUES:,} are accepted")])
    queues = []
    for index, item in enumerate(items):
        where = f"queues[{index}]"
        if not isinstance(item, Mapping):
            problems.append(Problem(where, "must be a JSON object"))
            continue
        unknown = [key for key in item if key not in QUEUE_FIELDS]
        problems.extend(
            Problem(f"{where}.{key}", f"unknown field; expected one of {', '.join(QUEUE_FIELDS)}") for key in unknown
        )
        if "name" not in item:
            problems.append(Problem(f"{where}.name", "is required"))
            continue
        queues.append((index, Queue(**{key: item[key] for key in QUEUE_FIELDS if key in item})))
    if problems:
        # Report the other fields' problems too, so one answer lists everything.
        try:
            _Tree(
                document.get("capacity", 0),
                [queue for _, queue in queues],
                [index for index, _ in queues],
                k_value=k_value,
            )
        except ConfigError as error:
            problems.extend(error.problems)
        raise ConfigError(problems)
    shares = _Tree(document["capacity"], [queue for _, queue in queues], k_value=k_value).divide()
    return {"fair_share": {name: json_number(value) for name, value in shares.items()}}


def json_number(value: Rational) -> int | float:
    """A share for JSON: an int when it is a whole number of GPUs, else the nearest float (``0.5``, ``1/3``)."""
    if value.denominator == 1:
        return int(value.numerator)
    return value.numerator / value.denominator


# --- reading and checking the input ------------------------------------------------------------------------------
#
# For 25,000 queues, reading costs more than dividing, so each field is read as a column: one C-level pass takes it
# from every queue, and a column of numbers is converted through a table of its distinct values (a pool has a few
# dozen distinct requests, not 25,000): each distinct value is read once, then one C-level pass looks every queue's
# up. Only a column with a value that is not allowed is read again one value at a time, to say where.

_NONE = type(None)
_NUMBERS = {int, float, Decimal, Fraction}


def _read(value, where: str, problems: list[Problem], *, minus_one: bool = False) -> int | Fraction | None:
    """``value`` as an int, or a Fraction when it is not whole; None, with a problem noted, when it is not allowed.

    ``-1`` is allowed only when ``minus_one``. A float is read by its shortest decimal form (``0.1`` is 1/10).
    """
    kind = type(value)
    if kind is int or kind is Fraction:
        number = value
    elif kind is float or kind is Decimal:
        decimal = Decimal(repr(value)) if kind is float else value
        if not decimal.is_finite():
            problems.append(Problem(where, "must be a finite number"))
            return None
        # Checked before the conversion, which would build 10^n for a Decimal like 1E-100000000.
        if decimal and not -19 < decimal.adjusted() < 16:
            problems.append(Problem(where, _range_message(minus_one)))
            return None
        number = Fraction(decimal)
    elif isinstance(value, Rational) and kind is not bool:
        number = Fraction(value.numerator, value.denominator)
    else:
        problems.append(Problem(where, "must be a number"))
        return None
    if minus_one and number == -1:
        return -1
    if not 0 <= number <= MAX_MAGNITUDE or number.denominator > MAX_DENOMINATOR:
        problems.append(Problem(where, _range_message(minus_one)))
        return None
    return int(number) if number.denominator == 1 else number


def _range_message(minus_one: bool) -> str:
    allowed = "-1 or a number" if minus_one else "a number"
    return f"must be {allowed} from 0 to 10^15 with at most 18 decimal places"


def _find_cycles(parents: list[int | None]) -> list[list[int]]:
    """The cycles of the parent links, each as its members in parent order."""
    cycles = []
    state = [0] * len(parents)  # 0 unseen, 1 on the current walk, 2 done
    for start in range(len(parents)):
        if state[start]:
            continue
        walk = []
        node = start
        while node is not None and state[node] == 0:
            state[node] = 1
            walk.append(node)
            node = parents[node]
        if node is not None and state[node] == 1:
            cycles.append(walk[walk.index(node) :])
        for member in walk:
            state[member] = 2
    return cycles


def _depths(parents: list[int | None], nodes) -> dict[int, int | None]:
    """The depth of each of ``nodes`` (a top-level queue's is 0), None for one on or below a cycle."""
    depths: dict[int, int | None] = {}
    for start in nodes:
        walk = []
        node = start
        while node is not None and node not in depths and len(walk) <= len(parents):
            walk.append(node)
            node = parents[node]
        # Reached the top, or a queue already known; else it walked round a cycle (get: None).
        depth = -1 if node is None else depths.get(node)
        for node in reversed(walk):
            depth = None if depth is None else depth + 1
            depths[node] = depth
    return depths


@dataclass
class _Column:
    """A field of every queue: the values as given, and each distinct value read (an int, a Fraction or -1)."""

    values: list
    table: dict
    ints: bool  # every value is an int


def _denominators(*columns: _Column) -> set[int]:
    return {amount.denominator for column in columns for amount in column.table.values()}


def _counts(column: _Column, scale: int, *, minus_one_as: int = -1) -> list[int]:
    """The column's amounts as integer counts of 1/scale (exact: scale is a multiple of each denominator)."""
    table = {value: minus_one_as if amount == -1 else int(amount * scale) for value, amount in column.table.items()}
    if column.ints and all(count == value for value, count in table.items()):
        return column.values  # plain ints, as they are
    return list(map(table.__getitem__, column.values))


class _Tree:
    """The queues as columns indexed by position, every amount an integer count of 1/scale GPU.

    A deserved of -1 and a weight of None are kept as -1; an unlimited limit as a number above any amount.
    """

    def __init__(self, capacity, queues: list, positions: list[int] | None = None, *, k_value: Number = 0):
        count = len(queues)
        if count > MAX_QUEUES:
            raise ConfigError([Problem("queues", f"has {count} queues; at most {MAX_QUEUES:,} are accepted")])
        self.queues = queues
        self.positions = positions if positions is not None else range(count)
        self.problems: list[Problem] = []
        capacity = _read(capacity, "capacity", self.problems)
        self.k = _read_k(k_value, self.problems)
        names, index_of = self._names()
        requests = self._amounts("request")
        deserveds = self._amounts("deserved", minus_one=True)
        limits = self._amounts("limit", minus_one=True)
        weights = self._amounts("over_quota_weight", nullable=True)
        priorities = self._integers("priority")
        orders = self._integers("creation_order", nullable=True)
        usages = self._usages()
        parents = self._parents(index_of)
        # Siblings usually come in runs (a department's projects one after the other): grouped run by run.
        children: dict[int | None, list[int]] = {}
        for parent, run in groupby(range(count), parents.__getitem__):
            if parent in children:
                children[parent].extend(run)
            else:
                children[parent] = list(run)
        roots = children.pop(None, [])
        # Only the parents are walked: their depths order the divisions, and tell a queue below a cycle.
        depths = _depths(parents, children)
        parent_nodes = sorted(
            (node for node, depth in depths.items() if depth is not None and node in children), key=depths.__getitem__
        )
        if len(roots) + sum(len(children[node]) for node in parent_nodes) < count:
            for cycle in _find_cycles(parents):
                path = " → ".join(names[node] for node in [*cycle, cycle[0]])
                self.problem(cycle[0], "parent", f"the parents form a cycle: {path}")
        if self.problems:
            raise ConfigError(self.problems)

        # One scale for every amount: all become integers (exact: it is a multiple of every denominator). The
        # weights have their own: only their ratios matter.
        scale = math.lcm(capacity.denominator, *_denominators(requests, deserveds, limits))
        self.scale = scale
        self.capacity = int(capacity * scale)
        # Unlimited: above any amount, a parent's request (the sum of up to MAX_QUEUES requests) included.
        unlimited = (MAX_MAGNITUDE * MAX_QUEUES + 1) * scale
        requests = _counts(requests, scale)
        deserveds = _counts(deserveds, scale)
        limits = _counts(limits, scale, minus_one_as=unlimited)
        weights = _counts(weights, math.lcm(*_denominators(weights)))
        # A parent's request is its children's sum, bottom-up.
        for node in reversed(parent_nodes):
            requests[node] = sum(map(requests.__getitem__, children[node]))
        self.names, self.requests, self.limits, self.deserveds, self.weights = (
            names,
            requests,
            limits,
            deserveds,
            weights,
        )
        self.priorities, self.orders = priorities, orders
        self.usages = usages if self.k else None  # only a k above 0 reads them
        self.children, self.roots, self.parent_nodes = children, roots, parent_nodes

    def problem(self, index: int, field: str, message: str) -> None:
        self.problems.append(Problem(f"queues[{self.positions[index]}].{field}", message))

    def _column(self, field: str) -> list:
        return list(map(attrgetter(field), self.queues))

    def _names(self) -> tuple[list[str], dict[str, int]]:
        names = self._column("name")
        if set(map(type, names)) <= {str} and all(names):
            index_of = dict(zip(names, range(len(names)), strict=True))
            if len(index_of) == len(names):
                return names, index_of
        index_of = {}
        for index, name in enumerate(names):
            if type(name) is not str or not name:
                self.problem(index, "name", "must be a non-empty string")
            elif name in index_of:
                self.problem(index, "name", f"'{name}' is already the name of queues[{self.positions[index_of[name]]}]")
            else:
                index_of[name] = index
                continue
            names[index] = f"#{self.positions[index]}"  # only ever shown in a cycle's message
        return names, index_of

    def _amounts(self, field: str, *, minus_one: bool = False, nullable: bool = False) -> _Column:
        """One amount of every queue, read through the table of its distinct values (-1 for None when nullable)."""
        values = self._column(field)
        kinds = set(map(type, values))
        if kinds <= (_NUMBERS | {_NONE} if nullable else _NUMBERS):
            problems: list[Problem] = []
            try:
                distinct = set(values)
            except TypeError:  # a signaling NaN cannot be hashed
                problems.append(Problem(field, "must be a finite number"))
            else:
                table = {
                    value: -1 if value is None else _read(value, field, problems, minus_one=minus_one)
                    for value in distinct
                }
            if not problems:
                return _Column(values, table, kinds <= {int})
        # Something is not allowed: read one by one to say where.
        for index, value in enumerate(values):
            if value is not None or not nullable:
                _read(value, f"queues[{self.positions[index]}].{field}", self.problems, minus_one=minus_one)
        return _Column([], {}, True)  # never used: the problems are raised

    def _usages(self) -> list:
        """Each queue's usage, 0 to 1, exactly (a problem noted for one that is not)."""
        values = self._column("usage")
        if not any(values):
            return [0] * len(values)  # zeros as ints: a float 0.0 would turn the offers into floats
        usages = []
        for index, value in enumerate(values):
            read: list[Problem] = []
            number = _read(value, "usage", read)
            if read or number > 1:
                self.problem(index, "usage", "must be a number from 0 to 1")
                number = 0
            usages.append(number)
        return usages

    def _integers(self, field: str, *, nullable: bool = False) -> list:
        values = self._column(field)
        if not set(map(type, values)) <= ({int, _NONE} if nullable else {int}):
            for index, value in enumerate(values):
                if type(value) is not int and not (nullable and value is None):
                    self.problem(index, field, "must be an integer or null" if nullable else "must be an integer")
        return values

    def _parents(self, index_of: dict[str, int]) -> list[int | None]:
        """Each queue's parent as a position, None at the top (and for an unknown parent, a problem noted)."""
        parents = self._column("parent")
        if set(map(type, parents)) <= {str, _NONE}:
            indexes = list(map(index_of.get, parents))
            if indexes.count(None) == parents.count(None):
                return indexes
        indexes = []
        for index, parent in enumerate(parents):
            if type(parent) is str and parent in index_of:
                indexes.append(index_of[parent])
                continue
            if parent is not None:
                message = f"no queue is named '{parent}'" if type(parent) is str else "must be a queue name or null"
                self.problem(index, "parent", message)
            indexes.append(None)
        return indexes

    # --- the division ------------------------------------------------------------------------------------------

    def divide(self) -> dict[str, Fraction]:
        shares = [0] * len(self.names)
        self._divide(self.capacity, self.roots, shares)
        children = self.children
        for node in self.parent_nodes:  # top-down
            self._divide(shares[node], children[node], shares)
        # Through a table of the distinct shares: building a Fraction costs a microsecond, 25 ms for 25,000.
        scale = self.scale
        table = {share: Fraction(share, scale) for share in set(shares)}
        return dict(zip(self.names, map(table.__getitem__, shares), strict=True))

    def _divide(self, amount: int, members: list[int], shares: list[int]) -> None:
        """Divide ``amount`` among the siblings ``members``, writing their shares (SEMANTICS §9.1 steps 1-4).

        Works on lists aligned with ``members``: ``wanted`` (the requestable), ``given`` (the share so far).
        """
        if not members:
            return
        # Siblings in one run (the usual case) are read and written as slices.
        start, stop = members[0], members[-1] + 1
        run = stop - start == len(members)
        requests = self.requests[start:stop] if run else list(map(self.requests.__getitem__, members))
        limits = self.limits[start:stop] if run else list(map(self.limits.__getitem__, members))
        deserved = self.deserveds[start:stop] if run else list(map(self.deserveds.__getitem__, members))
        if min(deserved) < 0:  # -1: the amount being divided
            deserved = [amount if part < 0 else part for part in deserved]
        # 1-2. Deserved phase, priority ignored: min(deserved, requestable), the requestable being the request capped
        # by the limit. A weight of None (limit = deserved) needs no cap of its own: min(deserved, requestable) is the
        # same with it, and such a member takes no part in the over-quota phase.
        given = list(map(min, deserved, requests, limits))
        remaining = amount - sum(given)
        if remaining > 0:
            wanted = list(map(min, requests, limits))
            weights = self.weights[start:stop] if run else list(map(self.weights.__getitem__, members))
            self._over_quota(remaining, members, wanted, given, weights)
        if run:
            shares[start:stop] = given
        else:
            for node, share in zip(members, given, strict=True):
                shares[node] = share

    def _over_quota(
        self, remaining: int, members: list[int], wanted: list[int], given: list[int], weights: list[int]
    ) -> None:
        """Steps 3 and 4 on the lists of ``_divide`` (positions in ``members``)."""
        priorities = self.priorities
        groups: dict[int, list[int]] = {}
        for position, (weight, request, share) in enumerate(zip(weights, wanted, given, strict=True)):
            if weight > 0 and request > share:
                groups.setdefault(priorities[members[position]], []).append(position)
        one = self.scale  # one GPU
        noted_by_group = []
        # 3. Over-quota phase: group by group, highest priority first, in rounds.
        for priority in sorted(groups, reverse=True):
            if remaining <= 0:
                break
            active = groups[priority]
            noted: dict[int, tuple[int, int]] = {}  # position: the GPU fraction lost in its latest round, as n/d
            while active:
                round_weights = weights if self.usages is None else self._usage_weights(members, active, weights)
                total_weight = sum(map(round_weights.__getitem__, active))
                if total_weight == 0:  # every member's s is 0 (§9.3): the rest goes to the next group
                    break
                at_start = remaining
                per_gpu = total_weight * one  # an offer in GPUs is at_start × w / per_gpu
                another_round = False
                unsatisfied = []
                for position in active:
                    offered = at_start * round_weights[position]  # the offer, times total_weight
                    missing = wanted[position] - given[position]
                    if missing * total_weight <= offered:
                        given[position] += missing
                        remaining -= missing
                        if missing * total_weight < offered:
                            another_round = True
                        noted.pop(position, None)
                    else:
                        gpus, lost = divmod(offered, per_gpu)
                        given[position] += gpus * one
                        remaining -= gpus * one
                        if lost:
                            noted[position] = (lost, per_gpu)
                        unsatisfied.append(position)
                if not another_round or remaining <= 0:
                    break
                active = unsatisfied
            noted_by_group.append(noted)
        # 4. Leftover: one GPU at most each, largest lost fraction first, then created first, then name.
        orders, names = self.orders, self.names
        for noted in noted_by_group:
            if remaining <= 0:
                break
            common = math.lcm(*{denominator for _, denominator in noted.values()})

            def rank(position, noted=noted, common=common):
                lost, denominator = noted[position]
                node = members[position]
                return -lost * (common // denominator), node if orders[node] is None else orders[node], names[node]

            for position in sorted(noted, key=rank):
                if remaining <= 0:
                    break
                gift = one if remaining > one else remaining
                given[position] += gift
                remaining -= gift

    def _usage_weights(self, members: list[int], active: list[int], weights: list[int]) -> dict[int, int]:
        """A round's weights with time-based fair share (SEMANTICS §9.3): ``s = max(0, nW + k × (nW − usage))``,
        ``nW = w / Σw`` over the round's members, as integers in the same ratios (by positions in ``members``)."""
        total = sum(map(weights.__getitem__, active))
        k, usages = self.k, self.usages
        shares = {}
        for position in active:
            normal = Fraction(weights[position], total)
            shares[position] = max(Fraction(0), normal + k * (normal - usages[members[position]]))
        common = math.lcm(*(share.denominator for share in shares.values()))
        return {position: int(share * common) for position, share in shares.items()}


def _read_k(value, problems: list[Problem]) -> Fraction:
    """``k_value``: any finite number, read exactly; 0 or below counts as 0 (SEMANTICS §9.3)."""
    if value is None:
        return Fraction(0)
    if type(value) in (int, float, Decimal, Fraction):
        decimal = Decimal(repr(value)) if type(value) is float else value
        if isinstance(decimal, Decimal) and (not decimal.is_finite() or (decimal and not -19 < decimal.adjusted() < 4)):
            problems.append(Problem("k_value", "must be a finite number from -1000 to 1000"))
            return Fraction(0)
        number = Fraction(decimal)
        if abs(number) > 1000 or number.denominator > MAX_DENOMINATOR:
            problems.append(Problem("k_value", "must be a number from -1000 to 1000 with at most 18 decimal places"))
            return Fraction(0)
        return max(Fraction(0), number)
    problems.append(Problem("k_value", "must be a number"))
    return Fraction(0)
