# test_autoreport: unmodified PyTorch programs (autoreport_trainer.py) with cosched's autoreport
# directory first on PYTHONPATH, against the real coschedd of daemon.sh: the daemon counts the
# training steps the hook sees, and the program runs as it would without it. Printed as TAP.
import json
import os
import subprocess
import sys
import tempfile
import time

BUILD = os.environ["COSCHED_BUILD_ROOT"]
SOURCE = os.environ["COSCHED_SOURCE_ROOT"]
JOB = os.environ["COSCHED_JOB"]
AUTOREPORT = SOURCE + "/libcosched/autoreport"
MODULE = SOURCE + "/libcosched/python"  # where the hook finds cosched.py in a source tree
TRAINER = os.path.dirname(os.path.abspath(__file__)) + "/autoreport_trainer.py"
PYTHON = sys.executable  # the interpreter with python3-torch (meson's python3)
# Bounds on waiting (a reply, a program): far above what a loaded 2-core machine takes; each
# ends as soon as what it waits for is there.
WAIT_S = 60
STEPS = 24
from tap_runner import run_tests, test


def cosched(*args):
    return subprocess.run([BUILD + "/client/cosched", "--timeout", str(WAIT_S)] + list(args), check=True,
                          capture_output=True, text=True, timeout=WAIT_S).stdout


def daemon_steps():
    return json.loads(cosched("--json", "stats", "--job", JOB))["jobs"][0]["steps"]


def daemon_progress():
    """The job's progress object, as cosched --json job get shows it."""
    return json.loads(cosched("--json", "job", "get", "--job", JOB))["progress"]


def environment(path=(AUTOREPORT, MODULE), **changes):
    env = dict(os.environ, PYTHONPATH=":".join(path), PYTHONDONTWRITEBYTECODE="1",
               COSCHED_AUTOREPORT_TIMEOUT=str(WAIT_S))
    for name in ("RANK", "LOCAL_RANK", "SLURM_PROCID", "COSCHED_RANK", "COSCHED_AUTOREPORT"):
        env.pop(name, None)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def run(args, env):
    """The program's exit status, stdout and stderr lines."""
    p = subprocess.run([PYTHON] + args, env=env, capture_output=True, text=True, timeout=10 * WAIT_S)
    return p.returncode, p.stdout, p.stderr.splitlines()


def train(mode, env=None, steps=STEPS):
    """Run the trainer: (its own step count, the daemon's count of its steps, its stderr lines)."""
    before = daemon_steps()
    rc, out, err = run([TRAINER, mode, str(steps)], env or environment())
    assert rc == 0, "%s exited %d: %s" % (mode, rc, err[-5:])
    own = json.loads(out.splitlines()[-1])["steps"]
    return own, daemon_steps() - before, [line for line in err if not resource_tracker_line(line)]


def resource_tracker_line(line):
    """Python's multiprocessing resource tracker warning at shutdown that a spawned worker's
    semaphore was left behind (seen on a loaded machine): Python's, not the reporter's."""
    return "resource_tracker" in line


def fresh_job():
    """The job registered anew: what the daemon learnt of the tests before it is gone."""
    cosched("job", "release", "--job", JOB)
    cosched("job", "register", "--job", JOB, "--uid", str(os.getuid()), "--role", "trainer", "--policy", "l3",
            "--cores-per-rank", "1")


def within_one(own, counted):
    # The first step only starts the clock: a program's N steps are N - 1 reports.
    return own - 1 <= counted <= own


# --- the hook's count


@test
def an_unmodified_loop_is_counted_by_the_daemon_within_one_step():
    own, counted, err = train("fashion", environment(RANK="1"))
    assert within_one(own, counted), (own, counted)
    assert err == [], err


@test
def of_two_optimizers_the_more_frequent_ones_steps_are_counted():
    own, counted, err = train("two-optimizers")
    assert within_one(own, counted), (own, counted)
    assert err == [], err


@test
def a_wrapper_stepping_its_inner_optimizer_thrice_is_one_step():
    own, counted, err = train("wrapper")
    assert within_one(own, counted), (own, counted)
    assert err == [], err


@test
def forked_dataloader_workers_that_step_optimizers_never_report():
    own, counted, err = train("loader-fork")
    assert within_one(own, counted), (own, counted)
    assert err == [], err


@test
def spawned_dataloader_workers_that_step_optimizers_never_report():
    own, counted, err = train("loader-spawn", steps=8)
    assert within_one(own, counted), (own, counted)
    assert err == [], err


@test
def a_forked_child_stepping_an_optimizer_never_reports():
    own, counted, err = train("fork-child")
    assert within_one(own, counted), (own, counted)
    assert err == [], err


@test
def a_loop_with_its_own_reporter_is_counted_once():
    own, counted, err = train("own-reporter")
    assert counted == own, (own, counted)
    assert err == [], err
    # The module's own Reporter silenced the hook in its process: nothing was even sent twice.
    assert daemon_progress()["steps_hook_ignored"] == 0, daemon_progress()
    # From now on the daemon would leave the hook's reports of this job out (docs/guard.md,
    # "Ranks and the hook"): the tests below get a job that has not reported itself.
    fresh_job()


# --- the step log (COSCHED_AUTOREPORT_STEPLOG: how cosched experiment follows such a program)


def step_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


@test
def with_a_step_log_each_reported_step_is_a_step_line_there_too():
    with tempfile.TemporaryDirectory() as tmp:
        own, counted, err = train("fashion", environment(COSCHED_AUTOREPORT_STEPLOG=tmp + "/steps.jsonl"))
        lines = step_lines(tmp + "/steps.jsonl")
    assert within_one(own, counted) and len(lines) == counted, (own, counted, len(lines))
    assert [l["step"] for l in lines] == list(range(1, counted + 1)), lines[:3]
    # no rank variable: rank 0, as cosched experiment reads it
    assert all(l["event"] == "step" and l["rank"] == 0 and l["t_step"] >= 0 for l in lines), lines[:3]
    assert all(a["time"] <= b["time"] for a, b in zip(lines, lines[1:])), "the wall clock went back"
    assert err == [], err


@test
def a_program_reporting_its_own_steps_still_gets_its_step_log():
    with tempfile.TemporaryDirectory() as tmp:
        own, counted, err = train("own-reporter", environment(COSCHED_AUTOREPORT_STEPLOG=tmp + "/steps.jsonl"))
        lines = step_lines(tmp + "/steps.jsonl")
    assert counted == own and within_one(own, len(lines)), (own, counted, len(lines))
    fresh_job()  # it reported itself: the hook's reports of this job would be left out from now on


# --- the switch, and processes outside a job


@test
def cosched_autoreport_0_reports_nothing():
    own, counted, err = train("fashion", environment(COSCHED_AUTOREPORT="0"))
    assert counted == 0, counted
    assert err == [], err


@test
def without_a_job_id_nothing_is_reported_or_printed():
    own, counted, err = train("fashion", environment(COSCHED_JOB=None, SLURM_JOB_ID=None))
    assert counted == 0, counted
    assert err == [], err


@test
def without_a_daemon_the_job_trains_with_one_line_at_most():
    with tempfile.TemporaryDirectory() as tmp:
        own, counted, err = train("fashion", environment(COSCHED_SOCKET=tmp + "/no-daemon.sock"))
    assert own == STEPS and counted == 0, (own, counted)
    assert len(err) <= 1 and all(line.startswith("cosched autoreport: ") for line in err), err


@test
def a_plain_start_imports_neither_torch_nor_cosched():
    rc, out, err = run(["-c", "import sys; print(sorted(m for m in ('torch', 'cosched', 'cosched_autoreport') "
                              "if m in sys.modules))"], environment())
    assert rc == 0 and err == [], (rc, err)
    assert out.split() == ["['cosched_autoreport']"], out


# --- the sitecustomize it hides


def a_sitecustomize(tmp, body):
    os.mkdir(tmp + "/site")
    with open(tmp + "/site/sitecustomize.py", "w") as f:
        f.write(body)
    return tmp + "/site"


@test
def an_existing_sitecustomize_still_runs_and_stays_the_module_of_that_name():
    with tempfile.TemporaryDirectory() as tmp:
        site = a_sitecustomize(tmp, "import os\nopen(os.environ['MARK'], 'w').close()\nWHO = 'theirs'\n")
        env = environment((AUTOREPORT, site, MODULE), MARK=tmp + "/mark")
        rc, out, err = run(["-c", "import sitecustomize; print(sitecustomize.WHO)"], env)
        assert (rc, out.strip(), err) == (0, "theirs", []), (rc, out, err)
        assert os.path.exists(tmp + "/mark")
        os.unlink(tmp + "/mark")
        own, counted, err = train("fashion", env)
        assert os.path.exists(tmp + "/mark")
    assert within_one(own, counted), (own, counted)


@test
def a_raising_sitecustomize_is_reported_as_python_does_and_the_job_runs():
    with tempfile.TemporaryDirectory() as tmp:
        site = a_sitecustomize(tmp, "raise RuntimeError('broken on purpose')\n")
        without_us = run(["-c", "print('ran')"], environment((site,)))
        with_us = run(["-c", "print('ran')"], environment((AUTOREPORT, site, MODULE)))
        own, counted, err = train("fashion", environment((AUTOREPORT, site, MODULE)))
    assert without_us[0] == 0 and without_us[1] == "ran\n", without_us
    assert without_us[2][0].startswith("Error in sitecustomize"), without_us
    assert with_us == without_us, (with_us, without_us)
    assert err == without_us[2], err
    assert within_one(own, counted), (own, counted)


# --- how the steps arrive, and ranks (the daemon's side)


@test
def a_hook_reported_job_shows_source_hook_and_its_torch_version_in_job_get():
    own, counted, err = train("fashion")
    assert within_one(own, counted), (own, counted)
    rc, version, _ = run(["-c", "import torch; print(torch.__version__)"], environment(COSCHED_AUTOREPORT="0"))
    progress = daemon_progress()
    assert progress["source"] == "steps", progress
    assert (progress["step_source"], progress["torch"]) == ("hook", version.strip()), progress


@test
def two_processes_with_rank_0_and_1_of_one_job_count_as_one_series():
    # A fresh job: the reports without a rank of the tests above would outrank both (docs/guard.md).
    fresh_job()
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for rank in ("0", "1"):
            out = open("%s/rank%s" % (tmp, rank), "w+")
            procs.append((subprocess.Popen([PYTHON, TRAINER, "fashion", str(STEPS)], env=environment(RANK=rank),
                                           stdout=out, stderr=subprocess.STDOUT, text=True), out))
            # rank 1 starts once rank 0 reports, as ranks that wait for each other in their first collective
            while rank == "0" and daemon_steps() == 0 and procs[0][0].poll() is None:
                time.sleep(0.1)
        owns = []
        for p, out in procs:
            assert p.wait(timeout=10 * WAIT_S) == 0, p.args
            out.seek(0)
            owns.append(json.loads(out.read().splitlines()[-1])["steps"])
            out.close()
    progress = daemon_progress()
    assert within_one(owns[0], daemon_steps()), (owns, daemon_steps())
    assert within_one(owns[1], progress["steps_other_ranks"]), (owns, progress)
    assert progress["judged_rank"] == 0, progress


if __name__ == "__main__":
    sys.exit(run_tests())
