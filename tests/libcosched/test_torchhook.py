# test_torchhook: the autoreport's way into torch >= 2.0 (the global optimizer step hooks), on a
# stand-in for torch.optim.optimizer: CI has Debian's torch 1.13, whose way test_autoreport runs.
import json
import os
import sys
import tempfile
import types

sys.path.insert(0, os.environ["COSCHED_SOURCE_ROOT"] + "/libcosched/autoreport")
import cosched_torchhook  # noqa: E402

from tap_runner import run_tests, test


def torch2_optimizer_module():
    """The two registration functions of torch 2.x's torch/optim/optimizer.py, and a step() that
    calls the hooks as its Optimizer.profile_hook_step does: pre, step, post (post skipped when
    the step raises)."""
    m = types.SimpleNamespace(pre=[], post=[])
    m.register_optimizer_step_pre_hook = m.pre.append
    m.register_optimizer_step_post_hook = m.post.append

    def step(opt, inner=()):
        for h in m.pre:
            assert h(opt, (), {}) is None  # None: the step's arguments stay as they are
        for o in inner:
            step(o)
        for h in m.post:
            h(opt, (), {})

    m.step = step
    return m


def attached(module):
    hooks = cosched_torchhook.attach(module)
    reported = []
    hooks._report = reported.append  # the bookkeeping alone: no cosched module, no daemon
    return hooks, reported


@test
def torch_2_gets_one_pre_and_one_post_hook_and_no_wrapping():
    m = torch2_optimizer_module()
    attached(m)
    assert len(m.pre) == 1 and len(m.post) == 1


@test
def with_torch_2_hooks_each_step_after_the_first_is_reported():
    m = torch2_optimizer_module()
    hooks, reported = attached(m)
    opt = object()
    for _ in range(5):
        m.step(opt)
    assert len(reported) == 4 and all(s >= 0 for s in reported), reported


@test
def with_torch_2_hooks_inner_steps_of_a_wrapper_are_not_reported():
    m = torch2_optimizer_module()
    hooks, reported = attached(m)
    outer, inner = object(), object()
    for _ in range(5):
        m.step(outer, inner=(inner, inner, inner))
    assert len(reported) == 4, reported


@test
def a_forked_child_inherits_the_hooks_but_never_reports():
    m = torch2_optimizer_module()
    hooks, reported = attached(m)
    hooks.pid = -1  # as seen from a child: the hooks belong to another pid
    for _ in range(5):
        m.step(object())
    assert reported == [], reported


@test
def a_failure_of_the_hook_is_one_line_and_then_silence():
    m = torch2_optimizer_module()
    hooks, reported = attached(m)

    def broken(seconds):
        raise RuntimeError("broken on purpose")

    hooks._report = broken
    opt = object()
    for _ in range(5):
        m.step(opt)  # never raises into the loop
    assert hooks.off is True


# --- the step log (COSCHED_AUTOREPORT_STEPLOG)


def attached_with_log(module, path):
    os.environ[cosched_torchhook.ENV_STEPLOG] = path
    try:
        return attached(module)
    finally:
        del os.environ[cosched_torchhook.ENV_STEPLOG]


def logged(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


@test
def with_a_step_log_each_reported_step_is_a_step_line_with_its_time():
    with tempfile.TemporaryDirectory() as tmp:
        m = torch2_optimizer_module()
        hooks, reported = attached_with_log(m, tmp + "/steps.jsonl")
        outer, inner = object(), object()
        for _ in range(5):
            m.step(outer, inner=(inner,))
        lines = logged(tmp + "/steps.jsonl")
    assert [l["step"] for l in lines] == [1, 2, 3, 4], lines
    assert [l["t_step"] for l in lines] == reported, (lines, reported)
    assert all(l["event"] == "step" and l["rank"] == 0 and l["source"] == "hook" for l in lines), lines
    assert all(isinstance(l["time"], float) for l in lines), lines


@test
def the_step_log_goes_on_after_the_reports_failed():
    with tempfile.TemporaryDirectory() as tmp:
        m = torch2_optimizer_module()
        hooks, reported = attached_with_log(m, tmp + "/steps.jsonl")

        def broken(seconds):
            raise RuntimeError("broken on purpose")

        hooks._report = broken
        for _ in range(5):
            m.step(object)
        assert hooks.off is True
        assert len(logged(tmp + "/steps.jsonl")) == 4


@test
def an_unwritable_step_log_is_one_line_and_the_reports_go_on():
    m = torch2_optimizer_module()
    hooks, reported = attached_with_log(m, "/nonexistent/dir/steps.jsonl")
    for _ in range(5):
        m.step(object)
    assert hooks.step_log is None and hooks.off is False
    assert len(reported) == 4, reported


@test
def without_the_variable_there_is_no_step_log():
    m = torch2_optimizer_module()
    hooks, reported = attached(m)
    assert hooks.step_log is None


if __name__ == "__main__":
    sys.exit(run_tests())
