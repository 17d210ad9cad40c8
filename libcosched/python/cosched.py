# cosched: the pure-Python twin of libcosched (standard library only) — a training loop reports
# each step's duration to coschedd over one connection kept open; failures never raise into it.
"""Report training steps to coschedd, the node's co-scheduler.

    import cosched
    with cosched.Reporter() as rep:          # socket and job from the environment
        for batch in loader:
            with rep.step():                 # times the block, reports it when it ends
                train_one_batch(batch)

A missing or stuck daemon costs the loop nothing but one warning: report_step returns False
and Reporter.error says why. Reporter(raise_errors=True) raises CoschedError instead.
docs/libcosched.md describes the reconnect rules, which are those of the C library.
"""

import contextlib
import json
import os
import select
import socket
import struct
import time
import warnings

__all__ = ["Reporter", "CoschedError", "CoschedWarning"]

# The wire vocabulary, as in proto/proto.h, proto/wire.h and proto/wire_reply.h (a test checks
# they agree).
PROTO_VERSION = 1
PROTO_MAX_FRAME = 65536
PROTO_DEFAULT_SOCKET = "/run/coschedd/coschedd.sock"
WIRE_REPORT = "report"
WIRE_PHASE = "phase"
WIRE_KEY_VERSION = "v"
WIRE_KEY_METHOD = "method"
WIRE_KEY_PARAMS = "params"
WIRE_KEY_OK = "ok"
WIRE_KEY_RESULT = "result"
WIRE_KEY_ERROR = "error"
WIRE_KEY_CODE = "code"
WIRE_KEY_MESSAGE = "message"
WIRE_R_STEPS = "steps"
WIRE_P_JOB = "job"
WIRE_P_STEP_TIME = "step_time"
WIRE_P_PHASE = "phase"
WIRE_P_RANK = "rank"
WIRE_P_SOURCE = "source"
WIRE_P_TORCH = "torch"
WIRE_STEPS_HOOK = "hook"
WIRE_ENV_SOCKET = "COSCHED_SOCKET"
WIRE_ENV_JOB = "COSCHED_JOB"
WIRE_ENV_SLURM_JOB = "SLURM_JOB_ID"

HOLD_OFF = 1.0  # seconds without a new connection after a failure
TIMEOUT_HOLD_OFF = 10  # after a timeout: this many timeouts, at least HOLD_OFF

# True once the program itself made a Reporter: it reports its own steps, so the injected step
# hook (autoreport, docs/autoreport.md) stays quiet and no step is counted twice.
program_reports = False


class CoschedError(OSError):
    """A report the daemon did not count (raised only with raise_errors=True)."""


class CoschedWarning(RuntimeWarning):
    """The first failure of a Reporter, once; the loop goes on."""


class _Closed(Exception):
    """The daemon closed the connection before answering: the request may go again."""


class _TimedOut(Exception):
    pass


def _first_set(*values):
    # An empty variable counts as unset: `COSCHED_JOB= cmd` must not name the job "".
    for v in values:
        if v:
            return v
    return None


class Reporter:
    """One connection to coschedd for one job. Not thread-safe: one Reporter per thread.
    rank: the process's rank in the job, sent with each report (None: not sent)."""

    _of_the_program = True  # False in the autoreport hook's subclass
    _report_params = {}  # more params for each report: the hook's subclass sends its source and torch version

    def __init__(self, socket_path=None, job=None, timeout=1.0, raise_errors=False, rank=None):
        global program_reports
        self.socket_path = _first_set(socket_path, os.environ.get(WIRE_ENV_SOCKET), PROTO_DEFAULT_SOCKET)
        self.job = _first_set(job, os.environ.get(WIRE_ENV_JOB), os.environ.get(WIRE_ENV_SLURM_JOB))
        if not timeout > 0:
            raise ValueError("timeout must be more than 0 seconds, not %r" % (timeout,))
        self.timeout = float(timeout)
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 0):
            raise ValueError("rank must be a whole number from 0, not %r" % (rank,))
        self.rank = rank
        if self._of_the_program:
            program_reports = True
        self.raise_errors = raise_errors
        self.error = None  # why the last call failed; None after a success
        self.steps = None  # the job's step count in the daemon's last reply
        self._sock = None
        self._retry_at = 0.0
        self._failure = None
        self._warned = False
        if self.job is None:
            self._failed("no job to report for: pass one, or set %s or %s" % (WIRE_ENV_JOB, WIRE_ENV_SLURM_JOB))
        else:
            # Connect now, so a wrong socket shows in .error before the first step.
            try:
                self._open()
            except OSError as e:
                self.error = str(e)

    # --- the training loop's calls

    def report_step(self, seconds):
        """Report one step of `seconds`; True when the daemon counted it."""
        try:
            seconds = float(seconds)
        except (TypeError, ValueError):
            seconds = float("nan")
        if not 0 < seconds < float("inf"):
            return self._failed("a step time must be a positive number of seconds, not %r" % (seconds,))
        params = dict(self._report_params, **{WIRE_P_STEP_TIME: seconds})
        if self.rank is not None:
            params[WIRE_P_RANK] = self.rank
        reply = self._ask(WIRE_REPORT, "report", params)
        if reply is None:
            return False
        steps = (reply.get(WIRE_KEY_RESULT) or {}).get(WIRE_R_STEPS)
        if not isinstance(steps, int):
            return self._failed("coschedd at %s answered a report without a step count" % self.socket_path)
        self.steps = steps
        self.error = None
        return True

    def phase(self, name):
        """Say what the job does now: "train" (its steps are judged), or another phase such as
        "eval" or "checkpoint", whose steps the daemon counts apart and its guard never judges.
        True when the daemon took it."""
        if not isinstance(name, str) or not name:
            return self._failed("a phase needs a name (train, eval, checkpoint), not %r" % (name,))
        if self._ask(WIRE_PHASE, "phase", {WIRE_P_PHASE: name}) is None:
            return False
        self.error = None
        return True

    @contextlib.contextmanager
    def step(self):
        """Time the block on the monotonic clock and report it; a block that raises is no step."""
        start = time.monotonic()
        yield self
        self.report_step(time.monotonic() - start)

    def close(self):
        self._drop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        self._drop()

    # --- failures: returned, warned about once, raised only when asked

    def _ask(self, method, what, params):
        """One request for the job, {job, **params}: the daemon's accepting reply, or None
        once the failure is recorded (_failed)."""
        if self.job is None:
            self._failed("no job to report for: pass one, or set %s or %s" % (WIRE_ENV_JOB, WIRE_ENV_SLURM_JOB), 1)
            return None
        request = {WIRE_KEY_VERSION: PROTO_VERSION, WIRE_KEY_METHOD: method,
                   WIRE_KEY_PARAMS: dict({WIRE_P_JOB: self.job}, **params)}
        try:
            reply = self._call(request)
        except OSError as e:
            self._failed(str(e), 1)
            return None
        if reply.get(WIRE_KEY_OK) is not True:
            err = reply.get(WIRE_KEY_ERROR) or {}
            self._failed("coschedd refused the %s for job %s: %s: %s"
                         % (what, self.job, err.get(WIRE_KEY_CODE, "error"),
                            err.get(WIRE_KEY_MESSAGE, "no reason given")), 1)
            return None
        return reply

    def _failed(self, message, depth=0):
        """Record a failure; the warning names the training loop's line (depth: calls between)."""
        self.error = message
        if self.raise_errors:
            raise CoschedError(message)
        if not self._warned:
            self._warned = True
            warnings.warn("cosched: %s (further failures are not shown; the training goes on)" % message,
                          CoschedWarning, stacklevel=3 + depth)
        return False

    # --- the one connection

    def _drop(self):
        sock, self._sock = getattr(self, "_sock", None), None
        if sock is not None:
            sock.close()

    def _hold(self, seconds, why):
        self._drop()
        self._failure = why
        self._retry_at = time.monotonic() + seconds
        return OSError("coschedd at %s: %s" % (self.socket_path, why))

    def _open(self):
        if self._sock is not None:
            return
        now = time.monotonic()
        if now < self._retry_at:
            raise OSError("coschedd at %s: %s (next attempt in %.1f s)"
                          % (self.socket_path, self._failure, self._retry_at - now))
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        # A Unix connect completes or fails at once (BlockingIOError: the backlog is full).
        try:
            s.connect(self.socket_path)
        except OSError as e:
            s.close()
            why = "the daemon's backlog is full" if isinstance(e, BlockingIOError) else e.strerror or str(e)
            raise self._hold(HOLD_OFF, "cannot connect: %s" % why) from None
        self._sock = s

    def _usable(self):
        # The daemon closes a connection left idle past its client_timeout (5 s by default),
        # and a restarted daemon left the old one closed. Between requests nothing may be
        # readable: readable means EOF or a frame nobody asked for; the stream is over.
        p = select.poll()
        p.register(self._sock, select.POLLIN)
        return not p.poll(0)

    def _call(self, request):
        payload = json.dumps(request, separators=(",", ":")).encode()
        if len(payload) > PROTO_MAX_FRAME:
            raise OSError("request larger than %d bytes" % PROTO_MAX_FRAME)
        frame = struct.pack(">I", len(payload)) + payload
        if self._sock is not None and not self._usable():
            self._drop()  # closed while idle: replaced below, no hold-off, nothing lost
        # A second attempt only when the daemon closed the connection before answering;
        # never after a timeout (a stuck daemon would only hold the loop twice as long).
        for attempt in (0, 1):
            self._open()
            deadline = time.monotonic() + self.timeout
            try:
                self._send(frame, deadline)
                return self._recv(deadline)
            except _Closed as e:
                self._drop()
                if attempt == 0:
                    continue
                raise self._hold(HOLD_OFF, str(e)) from None
            except _TimedOut:
                raise self._hold(max(HOLD_OFF, TIMEOUT_HOLD_OFF * self.timeout),
                                 "no reply within %d ms" % round(self.timeout * 1000)) from None
            except (OSError, ValueError) as e:
                raise self._hold(HOLD_OFF, str(e)) from None

    def _wait(self, events, deadline):
        left = deadline - time.monotonic()
        p = select.poll()
        p.register(self._sock, events)
        if left <= 0 or not p.poll(left * 1000):
            raise _TimedOut()

    def _send(self, frame, deadline):
        done = 0
        while done < len(frame):
            self._wait(select.POLLOUT, deadline)
            try:
                # MSG_NOSIGNAL: a closed peer is an error, never a SIGPIPE, even where an
                # embedding program has SIGPIPE at its default (Python itself ignores it).
                done += self._sock.send(frame[done:], socket.MSG_NOSIGNAL)
            except (BlockingIOError, InterruptedError):
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise _Closed("connection closed by the daemon") from None

    def _recv_exact(self, n, deadline, first):
        data = b""
        while len(data) < n:
            self._wait(select.POLLIN, deadline)
            try:
                chunk = self._sock.recv(n - len(data))
            except (BlockingIOError, InterruptedError):
                continue
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                if first and not data:
                    raise _Closed("connection closed by the daemon")
                raise OSError("connection closed by the daemon inside a reply")
            data += chunk
        return data

    def _recv(self, deadline):
        (n,) = struct.unpack(">I", self._recv_exact(4, deadline, True))
        if not 1 <= n <= PROTO_MAX_FRAME:
            raise OSError("bad frame length from the daemon")
        reply = json.loads(self._recv_exact(n, deadline, False))
        if not isinstance(reply, dict):
            raise OSError("a reply that is not a JSON object")
        return reply
