"""The replay's scheduler-like start order (``pools.fleet.scheduler``): the order the start estimates are measured
against, so it must keep §9.1's order and never start a job before it comes."""

from pools.fleet.scheduler import Job, Scheduler


def fleet(*, nodes=2, shares=None):
    return Scheduler({f"n{i}": 8 for i in range(nodes)}, shares or {"a": 8, "b": 8})


def test_a_job_that_fits_starts_when_it_comes_and_ends_after_its_runtime():
    scheduler = fleet()
    job = Job("j1", "a", "train", (8,), submitted=100.0, runtime=50.0)
    scheduler.submit(job)
    assert (job.started, scheduler.held["a"]) == (100.0, 8)
    scheduler.advance(149.0)
    assert scheduler.running == [job]
    scheduler.advance(150.0)
    assert (scheduler.finished, scheduler.held["a"]) == ([job], 0)


def test_gpus_freed_before_a_job_comes_are_not_taken_before_it_comes():
    scheduler = fleet(nodes=1)
    first = Job("j1", "a", "train", (8,), submitted=0.0, runtime=10.0)
    scheduler.submit(first)
    later = Job("j2", "b", "train", (8,), submitted=40.0, runtime=10.0)
    scheduler.submit(later)
    # The node freed at 10 s; the job that came at 40 s starts at 40 s, not at 10 s.
    assert later.started == 40.0


def test_the_project_holding_less_of_its_share_goes_first_then_the_longest_waiting():
    scheduler = fleet(nodes=2)
    scheduler.submit(Job("a-run", "a", "train", (8,), 0.0, 100.0))
    scheduler.submit(Job("b-run", "b", "train", (8,), 0.0, 200.0))
    a_old = Job("a-old", "a", "train", (8,), 10.0, 100.0)
    b_new = Job("b-new", "b", "train", (8,), 20.0, 100.0)
    scheduler.submit(a_old)
    scheduler.submit(b_new)
    # At 100 s a's job ends: a holds nothing, b holds its whole share, so a's job goes though b's waited too.
    scheduler.advance(100.0)
    assert (a_old.started, b_new.started) == (100.0, None)
    # At 200 s b's job ends and b's waiting job takes its node.
    scheduler.advance(200.0)
    assert b_new.started == 200.0


def test_a_gang_that_does_not_fit_lets_a_smaller_job_behind_it_start():
    scheduler = fleet(nodes=2)
    scheduler.submit(Job("half", "a", "finetune", (4,), 0.0, 100.0))
    gang = Job("gang", "a", "train", (8, 8), 1.0, 100.0)
    small = Job("small", "b", "batch", (2,), 2.0, 100.0)
    scheduler.submit(gang)
    scheduler.submit(small)
    assert gang.started is None and small.started == 2.0
    # Packed where it fits tightest: the small job shares the half-taken node, the other node stays whole.
    assert small.taken == {"n0": 2}
