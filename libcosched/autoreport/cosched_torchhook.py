# cosched_torchhook: the step hooks on torch's optimizers, and the reports of the training steps
# they find (cosched_steptracker) through the cosched module, from the process that trains only.
"""Loaded by cosched_autoreport once torch.optim.optimizer has run.

Two ways in, one per torch generation:
- torch >= 2.0: the global hooks register_optimizer_step_pre_hook / _post_hook, called around
  every step() of every optimizer (PyTorch's profiler uses the post hook the same way).
- torch < 2.0 (Debian bookworm's 1.13.1): Optimizer.__init__ calls _hook_for_profile, which
  wraps each optimizer class's step() once for the profiler; that wrapper calls the empty
  Optimizer._optimizer_step_code() after each step. That call would do for counting, but nothing
  runs before a step, and the nesting rule needs the start. So _hook_for_profile is wrapped:
  after torch's own wrapping, each class's step() gets ours once, entering before the step and
  leaving after it. A step that raises never leaves, as with 2.x's post hook.

With COSCHED_AUTOREPORT_STEPLOG=PATH each counted step is also appended to PATH as a JSON line in
cosched-train's step-line shape: how `cosched experiment --trainer CMD` follows a program that
prints no step lines of its own.
"""

import functools
import json
import os
import re
import sys
import time

from cosched_autoreport import tell
from cosched_steptracker import StepTracker

# The process's rank in its job, first set wins: cosched's own (cosched run start, the TaskProlog),
# torchrun's, then Slurm's.
RANK_VARIABLES = ("COSCHED_RANK", "RANK", "LOCAL_RANK", "SLURM_PROCID")
ENV_TIMEOUT = "COSCHED_AUTOREPORT_TIMEOUT"  # seconds a report may wait (the module's 1 s default)
ENV_STEPLOG = "COSCHED_AUTOREPORT_STEPLOG"  # a file each counted step is appended to (cosched experiment)


def attach(optimizer_module):
    hooks = StepHooks()
    if hasattr(optimizer_module, "register_optimizer_step_post_hook"):
        optimizer_module.register_optimizer_step_pre_hook(hooks.pre_hook)
        optimizer_module.register_optimizer_step_post_hook(hooks.post_hook)
    else:
        _wrap_each_class_step(optimizer_module.Optimizer, hooks)
    return hooks


def _wrap_each_class_step(optimizer_class, hooks):
    torch_hook_for_profile = optimizer_class._hook_for_profile

    @functools.wraps(torch_hook_for_profile)
    def _hook_for_profile(self):
        torch_hook_for_profile(self)
        try:
            cls = type(self)
            if not getattr(cls.step, "_cosched_hooked", False):
                cls.step = _reported_step(cls.step, hooks)
        except Exception as e:
            hooks.give_up(e)

    optimizer_class._hook_for_profile = _hook_for_profile


def _reported_step(step, hooks):
    # functools.wraps copies torch's `hooked` mark too, so torch does not wrap ours again.
    @functools.wraps(step)
    def step_reported(self, *args, **kwargs):
        hooks.entered(self)
        out = step(self, *args, **kwargs)
        hooks.left(self)
        return out

    step_reported._cosched_hooked = True
    return step_reported


class StepHooks:
    """The state of one process's hooks. A forked child (a DataLoader worker, a compile worker)
    inherits it and stays quiet: it belongs to the pid that attached it."""

    def __init__(self):
        self.pid = os.getpid()
        self.tracker = StepTracker()
        self.reporter = None
        self.off = False  # no more reports: after a failure of our own, or in a process that must not report
        path = os.environ.get(ENV_STEPLOG, "")
        self.step_log = StepLog(path) if path else None

    # torch >= 2.0's hook signatures: (optimizer, args, kwargs); None keeps the arguments.
    def pre_hook(self, optimizer, args, kwargs):
        self.entered(optimizer)

    def post_hook(self, optimizer, args, kwargs):
        self.left(optimizer)

    def _counting(self):
        # Reports off, the steps are still counted while a step log wants them.
        return os.getpid() == self.pid and not (self.off and self.step_log is None)

    def entered(self, optimizer):
        if not self._counting():
            return
        try:
            self.tracker.enter(optimizer)
        except Exception as e:
            self.step_log = None  # a count gone wrong is no log either
            self.give_up(e)

    def left(self, optimizer):
        if not self._counting():
            return
        try:
            seconds = self.tracker.leave(optimizer)
        except Exception as e:
            self.step_log = None
            self.give_up(e)
            return
        if seconds is None:
            return
        if self.step_log is not None:
            self._log_step(seconds)
        if self.off:
            return
        try:
            self._report(seconds)
        except Exception as e:
            self.give_up(e)

    def _log_step(self, seconds):
        """Written even where the program reports its own steps: the log is no report to coschedd."""
        try:
            if _in_dataloader_worker():
                self.step_log = None  # a spawned worker's optimizer steps are not the loop's
                return
            self.step_log.write(seconds, _rank())
        except Exception as e:
            tell("cannot write the step log %s, no more steps go there: %s: %s"
                 % (self.step_log.path, type(e).__name__, e))
            self.step_log = None

    def give_up(self, error):
        self.off = True
        tell("step hook failed, this process reports no more: %s: %s" % (type(error).__name__, error))

    def _report(self, seconds):
        # The program's own Reporter wins (checked at every step: it may be made late).
        program_module = sys.modules.get("cosched")
        if program_module is not None and program_module.program_reports:
            return
        if self.reporter is None:
            self.reporter = self._connect()
            if self.reporter is None:
                return
        self.reporter.report_step(seconds)

    def _connect(self):
        if _in_dataloader_worker():
            self.off = True
            return None
        cosched = _import_cosched()
        if cosched.program_reports:
            return None
        return _hook_reporter_class(cosched, _torch_version())(timeout=_timeout(), rank=_rank())


class StepLog:
    """The counted steps as cosched-train's step lines (docs/trainer-output.md: event, step, rank,
    t_step, time), one JSON line each, appended to the file at path: opened at the first step
    (a process that never trains writes nothing), line-buffered, so that a reader following the
    file sees each step as it ends."""

    def __init__(self, path):
        self.path = path
        self.file = None
        self.step = 0  # the step that just ended; step 0, the first, only started the clock

    def write(self, seconds, rank):
        if self.file is None:
            self.file = open(self.path, "a", buffering=1)
        self.step += 1
        line = {"event": "step", "step": self.step, "rank": rank if rank is not None else 0, "t_step": seconds,
                "time": time.time(), "source": "hook"}
        self.file.write(json.dumps(line) + "\n")


def _in_dataloader_worker():
    data = sys.modules.get("torch.utils.data")
    return data is not None and data.get_worker_info() is not None


def _import_cosched():
    """The cosched module on the job's sys.path, else the one meson installed with us (a venv's
    or a container's python does not see the system's dist-packages)."""
    try:
        import cosched
    except ImportError:
        import importlib.util

        path = os.path.join(_installed_module_dir(), "cosched.py")
        spec = importlib.util.spec_from_file_location("cosched", path)
        cosched = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cosched)
        # The program's `import cosched` finds this one, so its Reporter still silences ours.
        sys.modules["cosched"] = cosched
    return cosched


def _installed_module_dir():
    try:
        from cosched_installed import PYTHON_MODULE_DIR
    except ImportError:
        # a source tree (autoreport.dir or COSCHED_AUTOREPORT_DIR naming libcosched/autoreport):
        # the module is in libcosched/python beside it
        beside = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
        if os.path.isfile(os.path.join(beside, "cosched.py")):
            return beside
        raise ImportError("no cosched module on sys.path, and this is neither an installed autoreport nor a "
                          "source tree's") from None
    return PYTHON_MODULE_DIR


def _hook_reporter_class(cosched, torch_version):
    # coschedd shows the job's steps as the hook's, with the torch version when it has one
    hook_params = {cosched.WIRE_P_SOURCE: cosched.WIRE_STEPS_HOOK}
    if torch_version:
        hook_params[cosched.WIRE_P_TORCH] = torch_version

    class HookReporter(cosched.Reporter):
        """The hook's Reporter: not the program's own, its reports say they are the hook's, and
        its failures are one line of ours instead of the module's warning."""

        _of_the_program = False
        _report_params = hook_params

        def _failed(self, message, depth=0):
            self.error = message
            tell("steps are not reported while this lasts: %s" % message)
            return False

    return HookReporter


def _torch_version():
    """torch.__version__ as coschedd takes it (1-31 of [A-Za-z0-9.+_-]), else None: a build with
    an odd version string still reports its steps, without the version."""
    version = str(getattr(sys.modules.get("torch"), "__version__", ""))
    return version if re.fullmatch(r"[A-Za-z0-9.+_-]{1,31}", version) else None


def _rank():
    for name in RANK_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return None


def _timeout():
    try:
        seconds = float(os.environ.get(ENV_TIMEOUT, ""))
    except ValueError:
        return 1.0
    return seconds if 0 < seconds < float("inf") else 1.0
