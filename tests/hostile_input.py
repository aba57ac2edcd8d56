"""Hostile input the tests of SEMANTICS §7.3 send through every door, and what must not change when it is refused."""

from __future__ import annotations

from pools import selectors
from pools.models import ConfigRevision

# A "billion laughs" of under 256 bytes, as reported: seven levels of nine aliases, 4.8 million leaves.
ALIAS_BOMB = """\
a: &a [x,x,x,x,x,x,x,x,x]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
"""
# A template that prints nothing and loops 10^8 times, as reported.
NESTED_RANGES = "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}"


def config_snapshot():
    """Every config object and the number of revisions: equal before and after a refused request."""
    return selectors.config_state(), ConfigRevision.objects.count()
