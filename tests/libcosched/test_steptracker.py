# test_steptracker: which optimizer steps the autoreport counts as training steps and the times it
# gives them (cosched_steptracker, pure: no torch, no daemon), on a clock the test sets. TAP.
import os
import sys

sys.path.insert(0, os.environ["COSCHED_SOURCE_ROOT"] + "/libcosched/autoreport")
from cosched_steptracker import StepTracker  # noqa: E402

from tap_runner import run_tests, test


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Opt:
    """Stands in for an optimizer: the tracker only needs its identity."""


def step(tracker, clock, opt, seconds=0.5):
    tracker.enter(opt)
    clock.now += seconds
    return tracker.leave(opt)


@test
def the_first_step_starts_the_clock_and_each_next_one_is_the_time_since():
    clock, a = Clock(), Opt()
    t = StepTracker(clock)
    assert step(t, clock, a) is None
    assert step(t, clock, a, 0.25) == 0.25
    clock.now += 1.0  # data loading between steps counts
    assert step(t, clock, a, 0.25) == 1.25


@test
def a_step_inside_another_optimizers_step_is_not_a_step():
    clock, outer, inner = Clock(), Opt(), Opt()
    t = StepTracker(clock)
    times = []
    for _ in range(4):
        t.enter(outer)
        for _ in range(3):
            assert step(t, clock, inner) is None
        clock.now += 0.5
        times.append(t.leave(outer))
    assert times == [None, 2.0, 2.0, 2.0], times


@test
def a_step_that_raised_does_not_keep_the_next_ones_nested():
    clock, outer, inner = Clock(), Opt(), Opt()
    t = StepTracker(clock)
    t.enter(outer)
    t.enter(inner)  # inner raised: neither leaves
    assert step(t, clock, outer) is None  # outer enters again: the stale calls are dropped
    assert step(t, clock, outer) == 0.5


@test
def of_two_optimizers_the_one_stepping_twice_as_often_leads():
    clock, slow, fast = Clock(), Opt(), Opt()
    t = StepTracker(clock)
    counted = []
    for i in range(8):
        if i % 2 == 0:
            counted.append(("slow", step(t, clock, slow)))
        counted.append(("fast", step(t, clock, fast)))
    fast_times = [s for who, s in counted if who == "fast" and s is not None]
    slow_times = [s for who, s in counted if who == "slow" and s is not None]
    assert slow_times == [], counted  # after the first, the slow one never counts again
    assert len(fast_times) == 7, counted  # of eight fast steps, all but the first (it trails the slow one)


@test
def two_optimizers_stepping_equally_often_are_one_step_per_iteration():
    clock, g, d = Clock(), Opt(), Opt()
    t = StepTracker(clock)
    times = []
    for _ in range(5):
        times.append(step(t, clock, d))
        times.append(step(t, clock, g))
    assert [s for s in times if s is not None] == [1.0] * 4, times


@test
def a_new_optimizer_replacing_the_old_one_takes_over_at_its_second_step():
    clock, old, new = Clock(), Opt(), Opt()
    t = StepTracker(clock)
    for _ in range(10):
        step(t, clock, old)
    assert step(t, clock, new) is None
    assert step(t, clock, new) == 1.0
    assert step(t, clock, new) == 0.5


if __name__ == "__main__":
    sys.exit(run_tests())
