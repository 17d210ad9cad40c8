# test_python: the cosched Python module against the real coschedd (daemon.sh, client_timeout 60 s)
# and against fake daemons: the same cases as the C library's tests, printed as TAP.
import contextlib
import json
import math
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings

import cosched

BUILD = os.environ["COSCHED_BUILD_ROOT"]
SOURCE = os.environ["COSCHED_SOURCE_ROOT"]
SOCKET = os.environ["COSCHED_SOCKET"]
JOB = os.environ["COSCHED_JOB"]
# Bounds on waiting for a daemon (a reply, a start, an exit): far above what an ASan build on a
# loaded 2-core machine takes, and every wait ends as soon as what it waits for is there.
WAIT_S = 60
tests = []


def test(fn):
    tests.append(fn)
    return fn


def daemon_steps():
    """The job's step count as `cosched --json stats --job ID` prints it."""
    out = subprocess.run([BUILD + "/client/cosched", "--timeout", str(WAIT_S), "--json", "stats", "--job", JOB],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["jobs"][0]["steps"]


def patient(*args, **kwargs):
    """A Reporter that waits up to WAIT_S for each reply: the module's 1 s default is a training
    loop's bound, and a daemon under ASan on a loaded machine may stall longer than that."""
    return cosched.Reporter(*args, timeout=WAIT_S, **kwargs)


class FakeTime:
    """Stands in for the module's `time`: monotonic() is what the test sets, so hold-offs and
    step times are exact; poll() timeouts still run on real time. Binary fractions keep sums
    exact."""

    def __init__(self):
        self.now = 1024.0

    def monotonic(self):
        return self.now


@contextlib.contextmanager
def fake_time():
    real, cosched.time = cosched.time, FakeTime()
    try:
        yield cosched.time
    finally:
        cosched.time = real


def sockets():
    """{fd: inode} of this process's sockets: the module's connection, seen from outside."""
    found = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            m = re.fullmatch(r"socket:\[(\d+)\]", os.readlink("/proc/self/fd/" + fd))
        except OSError:
            continue
        if m:
            found[int(fd)] = int(m.group(1))
    return found


def the_socket():
    s = sockets()
    assert len(s) == 1, s
    return next(iter(s.items()))


def connectable():
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(SOCKET)
        return True
    except OSError:
        return False
    finally:
        s.close()


our_daemon = None  # a daemon this test started, which it must reap


def kill_daemon():
    global our_daemon
    with open(os.environ["COSCHED_TEST_DIR"] + "/daemon.pid") as f:
        pid = int(f.read())
    os.kill(pid, signal.SIGKILL)
    if our_daemon is not None and our_daemon.pid == pid:
        our_daemon.wait()
        our_daemon = None
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:  # the wrapper reaps its own; gone once the socket refuses
        if not connectable():
            return
        time.sleep(0.05)
    raise AssertionError("coschedd still answers %d s after SIGKILL" % WAIT_S)


def start_daemon(config=None):
    """A new daemon on the same socket and state dir, as this process's child, with a config
    file of daemon.sh's temp dir (None: its default, coschedd.yaml)."""
    global our_daemon
    extra = [os.environ["COSCHED_TEST_DIR"] + "/" + config] if config else []
    our_daemon = subprocess.Popen([os.environ["COSCHED_TEST_DAEMON"], "exec"] + extra)
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        if subprocess.run([BUILD + "/client/cosched", "--timeout", str(WAIT_S), "status"],
                          capture_output=True).returncode == 0:
            return
        time.sleep(0.05)
    raise AssertionError("the restarted coschedd does not answer within %d s" % WAIT_S)


@contextlib.contextmanager
def idle_close_daemon():
    """The daemon with client_timeout 1 s (daemon.sh's idle-close.yaml) in place of the one with
    60 s, under which no other test sees its connection closed; the default one again after."""
    kill_daemon()
    start_daemon("idle-close.yaml")
    try:
        yield
    finally:
        kill_daemon()
        start_daemon()


class Listener:
    """A socket nobody serves unless the test does: connects land in its backlog."""

    def __init__(self, listening=True):
        self.dir = tempfile.mkdtemp(prefix="cosched-py-")
        self.path = self.dir + "/fake.sock"
        self.sock = None
        if listening:
            self.listen()

    def listen(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(self.path)
        self.sock.listen(16)
        self.sock.setblocking(False)

    def pending(self):
        self.sock.setblocking(False)
        n = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return n
            conn.close()
            n += 1

    def close(self):
        self.sock.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


# --- the module against the real daemon


@test
def the_wire_names_are_those_of_proto_h_and_wire_h():
    text = "".join(open(SOURCE + "/proto/" + h).read() for h in ("proto.h", "wire.h", "wire_reply.h"))
    defines = dict(re.findall(r'#define (\w+) ("[^"]*"|\d+)', text))
    names = [n for n in dir(cosched) if re.fullmatch(r"(PROTO|WIRE)_[A-Z_]+", n)]
    assert len(names) >= 10, names
    for name in names:
        assert json.loads(defines[name]) == getattr(cosched, name), name


@test
def a_reporter_finds_socket_and_job_in_the_environment():
    before = daemon_steps()
    rep = patient()
    assert rep.error is None, rep.error
    assert rep.report_step(0.25) is True, rep.error
    assert rep.error is None
    assert daemon_steps() == before + 1
    assert rep.steps == before + 1
    rep.close()


@test
def slurm_job_id_names_the_job_when_cosched_job_is_empty():
    before = daemon_steps()
    os.environ["COSCHED_JOB"], os.environ["SLURM_JOB_ID"] = "", JOB
    try:
        rep = patient()
    finally:
        os.environ["COSCHED_JOB"] = JOB
        del os.environ["SLURM_JOB_ID"]
    assert rep.report_step(0.25), rep.error
    assert daemon_steps() == before + 1
    rep.close()


@test
def arguments_win_over_the_environment():
    os.environ["COSCHED_SOCKET"], os.environ["COSCHED_JOB"] = "/nonexistent/coschedd.sock", "other"
    try:
        rep = patient(SOCKET, JOB)
    finally:
        os.environ["COSCHED_SOCKET"], os.environ["COSCHED_JOB"] = SOCKET, JOB
    assert rep.report_step(0.25), rep.error
    rep.close()


@test
def steps_in_another_phase_are_not_the_jobs():
    rep = patient()
    before = daemon_steps()
    assert rep.phase("eval"), rep.error
    assert rep.report_step(0.5), rep.error
    assert daemon_steps() == before
    assert rep.phase("train"), rep.error
    assert rep.report_step(0.1), rep.error
    assert daemon_steps() == before + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert rep.phase("Eval!") is False
    assert "EINVAL" in rep.error, rep.error
    rep.close()


@test
def every_report_is_counted_by_the_daemon_over_one_connection():
    before = daemon_steps()
    rep = patient()
    first = the_socket()
    for i in range(50):
        assert rep.report_step(0.1 + i * 0.001), rep.error
    assert the_socket() == first
    assert daemon_steps() == before + 50
    assert rep.steps == before + 50
    rep.close()


@test
def the_step_block_is_reported_and_a_block_that_raises_is_not():
    before = daemon_steps()
    rep = patient()
    with rep.step():
        time.sleep(0.01)
    try:
        with rep.step():
            raise KeyError("in the training step")
    except KeyError:
        pass
    else:
        raise AssertionError("the exception from the block was swallowed")
    assert daemon_steps() == before + 1
    rep.close()


@test
def the_with_block_closes_the_connection():
    with patient() as rep:
        assert rep.report_step(0.1), rep.error
        assert len(sockets()) == 1
    assert sockets() == {}


@test
def a_step_longer_than_the_idle_timeout_is_reported():
    with idle_close_daemon():
        rep = patient()
        assert rep.report_step(0.1), rep.error
        before = daemon_steps()
        fd, first = the_socket()
        with rep.step():
            # The step lasts until the daemon has dropped the idle connection (on its first
            # tick past client_timeout), so that the report has to find it closed and make a
            # new one.
            p = select.poll()
            p.register(fd, select.POLLIN)
            assert p.poll(WAIT_S * 1000), "the daemon did not close the idle connection"
        assert rep.error is None, rep.error
        assert the_socket()[1] != first
        assert daemon_steps() == before + 1
        rep.close()


@test
def a_refusal_says_why_warns_once_and_keeps_the_connection():
    rep = patient(job="no-such-job")
    first = the_socket()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert rep.report_step(0.1) is False
            assert "ENOENT: no job no-such-job" in rep.error, rep.error
    assert [w.category for w in caught] == [cosched.CoschedWarning], caught
    assert the_socket() == first
    rep.close()


@test
def raise_errors_raises_a_coschederror_with_the_reason():
    rep = patient(job="no-such-job", raise_errors=True)
    try:
        rep.report_step(0.1)
    except cosched.CoschedError as e:
        assert "ENOENT" in str(e), e
    else:
        raise AssertionError("no CoschedError")
    rep.close()


@test
def the_report_after_a_daemon_restart_reconnects():
    rep = patient()
    assert rep.report_step(0.1), rep.error
    kill_daemon()
    start_daemon()
    assert rep.report_step(0.1), rep.error
    assert rep.steps == 1  # counted by the new daemon (steps live in its memory)
    assert daemon_steps() == 1
    rep.close()


@test
def reports_fail_while_the_daemon_is_away_and_resume_when_it_is_back():
    rep = patient()
    assert rep.report_step(0.1), rep.error
    kill_daemon()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert rep.report_step(0.1) is False
        assert SOCKET in rep.error and "cannot connect" in rep.error, rep.error
        start_daemon()
        before = daemon_steps()
        end = time.monotonic() + WAIT_S  # failing at once while held off (1 s), then counted
        while time.monotonic() < end and not rep.report_step(0.1):
            time.sleep(0.05)
    assert rep.error is None, rep.error
    assert daemon_steps() == before + 1
    assert len(caught) == 1, caught
    rep.close()


# --- without a working daemon


@test
def no_daemon_is_a_false_return_and_one_warning_not_an_exception():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = cosched.Reporter("/nonexistent/coschedd.sock", "j1")
        assert "/nonexistent/coschedd.sock" in rep.error and "cannot connect" in rep.error, rep.error
        for _ in range(3):
            assert rep.report_step(0.1) is False
            with rep.step():
                pass
    assert len(caught) == 1 and "/nonexistent/coschedd.sock" in str(caught[0].message), caught
    rep.close()


@test
def a_daemon_that_never_answers_costs_a_timeout_then_a_hold_off():
    fake = Listener()
    with fake_time() as clock, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = cosched.Reporter(fake.path, "j1", timeout=0.05)
        failed = clock.now
        assert rep.report_step(0.1) is False
        assert "no reply within 50 ms" in rep.error, rep.error
        assert fake.pending() == 1
        # Reports within the hold-off (1 s: ten timeouts of 50 ms are less) make no
        # connection and say when the next is, up to its last instant.
        clock.now = failed + 0.5
        assert rep.report_step(0.1) is False
        assert "no reply within 50 ms (next attempt in 0.5 s)" in rep.error, rep.error
        clock.now = failed + 0.9990234375
        assert rep.report_step(0.1) is False
        assert "(next attempt in 0.0 s)" in rep.error, rep.error
        assert fake.pending() == 0
        clock.now = failed + 1.0  # at its end, one new attempt
        assert rep.report_step(0.1) is False
        assert "no reply within 50 ms" in rep.error and "next attempt" not in rep.error, rep.error
        assert fake.pending() == 1
    rep.close()
    fake.close()


@test
def after_a_longer_timeout_the_hold_off_is_ten_timeouts():
    fake = Listener()
    with fake_time() as clock, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = cosched.Reporter(fake.path, "j1", timeout=0.25)
        failed = clock.now
        assert rep.report_step(0.1) is False
        assert "no reply within 250 ms" in rep.error, rep.error
        assert fake.pending() == 1
        clock.now = failed + 2.4990234375
        assert rep.report_step(0.1) is False
        assert "(next attempt in 0.0 s)" in rep.error, rep.error
        assert fake.pending() == 0
        clock.now = failed + 2.5
        assert rep.report_step(0.1) is False
        assert "next attempt" not in rep.error, rep.error
        assert fake.pending() == 1
    rep.close()
    fake.close()


@test
def a_refused_connect_is_held_off_for_a_second():
    fake = Listener(listening=False)
    with fake_time() as clock, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        failed = clock.now
        rep = cosched.Reporter(fake.path, "j1", timeout=0.05)
        assert "cannot connect" in rep.error, rep.error
        clock.now = failed + 0.9990234375
        assert rep.report_step(0.1) is False
        assert "(next attempt in 0.0 s)" in rep.error, rep.error
        fake.listen()
        assert fake.pending() == 0
        clock.now = failed + 1.0
        assert rep.report_step(0.1) is False
        assert "no reply within 50 ms" in rep.error, rep.error
        assert fake.pending() == 1
    rep.close()
    fake.close()


@test
def a_peer_that_stops_reading_costs_an_error_not_a_sigpipe():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # as in a program that embeds Python
    fake = Listener()
    rep = cosched.Reporter(fake.path, "j1", timeout=0.05)
    peer, _ = fake.sock.accept()
    peer.shutdown(socket.SHUT_RD)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert rep.report_step(0.1) is False
    assert "no reply within 50 ms" in rep.error, rep.error  # sent again on a new connection
    assert fake.pending() == 1
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    peer.close()
    rep.close()
    fake.close()


def fake_daemon(fake, connections, answer_from, seen):
    """Serve `connections` connections, one request each; answer from `answer_from` on."""
    fake.sock.setblocking(True)
    fake.sock.settimeout(WAIT_S)
    for i in range(connections):
        conn, _ = fake.sock.accept()
        conn.settimeout(WAIT_S)
        head = conn.recv(4, socket.MSG_WAITALL)
        body = conn.recv(struct.unpack(">I", head)[0], socket.MSG_WAITALL)
        seen.append(json.loads(body))
        if i >= answer_from:
            reply = json.dumps({"ok": True, "result": {"job": "j1", "steps": 7}}).encode()
            conn.sendall(struct.pack(">I", len(reply)) + reply)
        conn.close()


@test
def a_report_the_daemon_closed_on_is_sent_once_more_and_no_more():
    fake, seen = Listener(), []
    t = threading.Thread(target=fake_daemon, args=(fake, 2, 99, seen))
    t.start()
    rep = patient(fake.path, "j1")  # the close, not a timeout, ends each attempt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert rep.report_step(0.1) is False
    t.join()
    assert "connection closed by the daemon" in rep.error, rep.error
    assert len(seen) == 2 and fake.pending() == 0
    rep.close()
    fake.close()


@test
def a_report_the_daemon_closed_on_succeeds_on_the_new_connection():
    fake, seen = Listener(), []
    t = threading.Thread(target=fake_daemon, args=(fake, 2, 1, seen))
    t.start()
    rep = patient(fake.path, "j1")
    assert rep.report_step(0.1), rep.error
    t.join()
    assert rep.steps == 7 and len(seen) == 2
    assert seen[1] == {"v": 1, "method": "report", "params": {"job": "j1", "step_time": 0.1}}, seen
    rep.close()
    fake.close()


@test
def a_connection_closed_while_idle_is_replaced_without_using_up_the_resend():
    fake, seen = Listener(), []
    rep = patient(fake.path, "j1")
    idle, _ = fake.sock.accept()
    idle.close()  # as coschedd does past its client_timeout
    # Then a daemon that closes the next connection unanswered and answers the one after: the
    # report gets through only if the idle close was noticed before sending.
    t = threading.Thread(target=fake_daemon, args=(fake, 2, 1, seen))
    t.start()
    assert rep.report_step(0.1), rep.error
    t.join()
    assert len(seen) == 2, seen
    rep.close()
    fake.close()


@test
def a_timed_step_sends_report_with_the_job_and_the_time_elapsed():
    fake, seen = Listener(), []
    t = threading.Thread(target=fake_daemon, args=(fake, 1, 0, seen))
    t.start()
    with fake_time() as clock:
        rep = patient(fake.path, "job-42")
        with rep.step():
            clock.now += 0.375  # the step
    t.join()
    assert rep.error is None, rep.error
    assert seen == [{"v": 1, "method": "report", "params": {"job": "job-42", "step_time": 0.375}}], seen
    rep.close()
    fake.close()


@test
def a_reporter_given_a_rank_sends_it_with_each_report():
    fake, seen = Listener(), []
    t = threading.Thread(target=fake_daemon, args=(fake, 1, 0, seen))
    t.start()
    rep = patient(fake.path, "job-42", rank=3)
    assert rep.report_step(0.5), rep.error
    t.join()
    assert seen == [{"v": 1, "method": "report", "params": {"job": "job-42", "step_time": 0.5, "rank": 3}}], seen
    rep.close()
    fake.close()
    for bad in (-1, 1.5, "0", True):
        try:
            cosched.Reporter(fake.path, "j1", rank=bad)
            raise AssertionError("rank %r was taken" % (bad,))
        except ValueError:
            pass


def daemon_reports_taken():
    """Steps counted, and reports left out as another rank's copies of them."""
    out = subprocess.run([BUILD + "/client/cosched", "--timeout", str(WAIT_S), "--json", "stats", "--job", JOB],
                         check=True, capture_output=True, text=True).stdout
    job = json.loads(out)["jobs"][0]
    return job["steps"] + job["progress"]["steps_other_ranks"]


@test
def the_daemon_takes_a_report_that_carries_a_rank():
    # Counted, or (the job's reports without a rank outrank it) left out as rank 1's copy of a
    # step: docs/guard.md, "Ranks and the hook".
    before = daemon_reports_taken()
    rep = patient(rank=1)
    assert rep.report_step(0.25), rep.error
    assert daemon_reports_taken() == before + 1
    rep.close()


@test
def only_a_reporter_the_program_makes_marks_that_it_reports_its_own_steps():
    class HookReporter(cosched.Reporter):  # as the autoreport's (libcosched/autoreport)
        _of_the_program = False

    cosched.program_reports = False
    HookReporter(SOCKET, JOB).close()
    assert cosched.program_reports is False
    cosched.Reporter(SOCKET, JOB).close()
    assert cosched.program_reports is True


@test
def bad_step_times_are_refused_before_anything_is_sent():
    fake = Listener()
    rep = cosched.Reporter(fake.path, "j1")
    peer, _ = fake.sock.accept()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for bad in (0, -1, math.nan, math.inf, "abc", None):
            assert rep.report_step(bad) is False
            assert "positive number of seconds" in rep.error, rep.error
    peer.setblocking(False)
    try:
        peer.recv(1)
        raise AssertionError("something was sent")
    except BlockingIOError:
        pass
    peer.close()
    rep.close()
    fake.close()


@test
def no_job_anywhere_is_one_warning_not_a_crash():
    saved = {k: os.environ.pop(k) for k in ("COSCHED_JOB", "SLURM_JOB_ID") if k in os.environ}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rep = cosched.Reporter("/nonexistent/coschedd.sock")
            assert rep.report_step(0.1) is False
    finally:
        os.environ.update(saved)
    assert "no job to report for" in rep.error and "COSCHED_JOB" in rep.error, rep.error
    assert len(caught) == 1, caught


def main():
    failed = 0
    for n, fn in enumerate(tests, 1):
        try:
            fn()
            print("ok %d - %s" % (n, fn.__name__.replace("_", " ")))
        except Exception:
            failed += 1
            print("not ok %d - %s" % (n, fn.__name__.replace("_", " ")))
            for line in traceback.format_exc().splitlines():
                print("# " + line)
        sys.stdout.flush()
    if our_daemon is not None:  # a clean stop: one killed leaves its guard's empty cgroup subtree
        our_daemon.terminate()
        try:
            our_daemon.wait(timeout=10)
        except subprocess.TimeoutExpired:
            our_daemon.kill()
            our_daemon.wait()
    print("1..%d" % len(tests))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
