# cosched_autoreport: what sitecustomize runs at every Python start — the switch, and a post-import
# hook that attaches the step hooks (cosched_torchhook) only once torch.optim has been imported.
"""Start-up half of cosched's injected step reporter (docs/autoreport.md).

It runs in every Python process of a job, most of which never train: it imports nothing beyond
os and sys, never imports torch, and does nothing at all in a process outside a job or with
COSCHED_AUTOREPORT=0.
"""

import os
import sys

ENV_SWITCH = "COSCHED_AUTOREPORT"
SWITCHED_OFF = ("0", "off", "no", "false")
# As cosched.WIRE_ENV_JOB and WIRE_ENV_SLURM_JOB; cosched itself is imported only once a step is
# reported (its socket and json imports cost every process).
ENV_JOBS = ("COSCHED_JOB", "SLURM_JOB_ID")
# The module that defines Optimizer and, from torch 2.0, the global step hooks.
OPTIMIZER_MODULE = "torch.optim.optimizer"

_told = False


def tell(why):
    """The one line a process prints about cosched, ever; the training goes on regardless."""
    global _told
    if _told:
        return
    _told = True
    try:
        sys.stderr.write("cosched autoreport: %s (the training goes on)\n" % why)
    except Exception:
        pass


def wanted(environ=os.environ):
    """Whether this process may report: it belongs to a job and the switch is not off."""
    if environ.get(ENV_SWITCH, "").strip().lower() in SWITCHED_OFF:
        return False
    return any(environ.get(name) for name in ENV_JOBS)


def install():
    """Attach the step hooks when torch.optim.optimizer loads (at once if it already has)."""
    if not wanted():
        return
    module = sys.modules.get(OPTIMIZER_MODULE)
    if module is not None:
        _attach(module)
    elif not any(isinstance(f, _OptimizerImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _OptimizerImportHook())


def _attach(module):
    try:
        import cosched_torchhook

        cosched_torchhook.attach(module)
    except Exception as e:
        tell("cannot hook torch's optimizers: %s: %s" % (type(e).__name__, e))


class _OptimizerImportHook:
    """A meta path finder that finds nothing of its own: it asks the finders after it for
    torch.optim.optimizer and wraps the loader they return, so that the hooks attach right after
    the module has run and before any optimizer exists."""

    def find_spec(self, name, path=None, target=None):
        if name != OPTIMIZER_MODULE:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _AttachingLoader(spec.loader, self)
        return spec


class _AttachingLoader:
    def __init__(self, loader, finder):
        self._loader = loader
        self._finder = finder

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        # The module keeps the real loader (tools that read source or resources see no wrapper),
        # and the finder goes: one module, once, and later imports pay nothing.
        module.__loader__ = self._loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._loader
        try:
            sys.meta_path.remove(self._finder)
        except ValueError:
            pass
        _attach(module)
