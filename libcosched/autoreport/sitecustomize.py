# sitecustomize (cosched's): puts cosched's step hook into every Python process that has this
# directory on PYTHONPATH, then runs the sitecustomize it hides (docs/autoreport.md).
import os
import sys


def _install_step_hook():
    # Ours must never stop the program: one line at most, and Python starts as it would have.
    try:
        import cosched_autoreport

        cosched_autoreport.install()
    except Exception as e:
        try:
            sys.stderr.write("cosched autoreport: %s: %s (this process's steps are not reported)\n"
                             % (type(e).__name__, e))
        except Exception:
            pass


def _run_the_next_sitecustomize():
    """Import the sitecustomize further on sys.path (Debian's, a venv's, conda's) as site.py would
    have without us. Its errors are not ours to catch: they reach site.py's execsitecustomize,
    which prints "Error in sitecustomize; set PYTHONVERBOSE for traceback" and goes on, exactly
    as for that module alone."""
    here = os.path.dirname(os.path.realpath(__file__))
    saved = sys.path[:]
    ours = sys.modules.pop("sitecustomize", None)
    sys.path[:] = [p for p in saved if os.path.realpath(p or ".") != here]
    try:
        __import__("sitecustomize")
    except ImportError as e:
        if e.name != "sitecustomize":
            raise
        # No other: ours stays the module (site.py's import takes whatever sys.modules holds).
        sys.modules["sitecustomize"] = ours
    finally:
        sys.path[:] = saved


_install_step_hook()
_run_the_next_sitecustomize()
