"""hostile: clients that misbehave on purpose against a running coschedd, one TAP line each
(tests/daemon/test_hostile.sh starts the daemon). Usage: hostile.py SOCKET DAEMON_PID CASE...
Cases: bytes, huge, unread, fds, strangers, control, big; and on a daemon with the limits of
test_hostile.sh's flood.yaml: flood, waiting, rate. Every case ends by checking that a
well-behaved client is still served."""
import fcntl, json, os, re, resource, select, socket, struct, subprocess, sys, termios, time, traceback

path, daemon_pid = sys.argv[1], int(sys.argv[2])
results = []


def wait_until(done, ceiling=60):
    """Poll done() until it holds, for `ceiling` seconds at most; returns its last value. Cases
    wait for a state this way, never for a time: a loaded machine only makes them slower."""
    end = time.monotonic() + ceiling
    while True:
        value = done()
        if value or time.monotonic() >= end:
            return value
        time.sleep(0.01)


def conn(timeout=60):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(path)
    return s


def frame(payload):
    return struct.pack(">I", len(payload)) + payload


def request(method, params=None):
    d = {"v": 1, "method": method}
    if params is not None:
        d["params"] = params
    return frame(json.dumps(d).encode())


def reply(s):
    def exactly(n):
        b = b""
        while len(b) < n:
            chunk = s.recv(n - len(b))
            if not chunk:
                return None
            b += chunk
        return b
    head = exactly(4)
    if head is None:
        return None
    body = exactly(struct.unpack(">I", head)[0])
    return json.loads(body) if body is not None else None


def call(method, params=None):
    s = conn()
    s.sendall(request(method, params))
    r = reply(s)
    s.close()
    return r


def closed(s):
    try:
        while True:
            if not s.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def served():
    try:
        r = call("ping")
        return bool(r and r["ok"])
    except OSError:
        return False


def check(name, passed):
    results.append((name, bool(passed)))


def daemon_fds():
    return len(os.listdir("/proc/%d/fd" % daemon_pid))


def fds_back_to(fds):
    """The daemon's descriptor count once it is back to fds (or after 60 s): it closes a
    client's descriptor when it next reads that client's EOF, not when the client leaves."""
    wait_until(lambda: daemon_fds() <= fds)
    return daemon_fds()


def unread(s):
    """Bytes sent on s that the daemon has not read yet (SIOCOUTQ)."""
    return struct.unpack("i", fcntl.ioctl(s, termios.TIOCOUTQ, b"\0" * 4))[0]


def listening_socket_inode():
    for line in open("/proc/net/unix").read().splitlines()[1:]:
        f = line.split()
        if len(f) >= 8 and f[7] == path and int(f[3], 16) & 0x10000:  # __SO_ACCEPTCON: listening
            return int(f[6])
    return None


def daemon_polls_listening_socket():
    """Whether the daemon's epoll set asks for the listening socket's EPOLLIN (its fdinfo)."""
    inode = listening_socket_inode()
    fd_dir = "/proc/%d/fd" % daemon_pid
    for fd in os.listdir(fd_dir):
        try:
            if os.readlink("%s/%s" % (fd_dir, fd)) != "anon_inode:[eventpoll]":
                continue
            lines = open("/proc/%d/fdinfo/%s" % (daemon_pid, fd)).read().splitlines()
        except OSError:
            continue
        for line in lines:  # "tfd: 11 events: 19 data: 1 pos:0 ino:678c7 sdev:9", hex
            m = re.match(r"tfd:\s*\d+\s+events:\s*([0-9a-f]+)\s.*\bino:([0-9a-f]+)", line)
            if m and int(m.group(2), 16) == inode:
                return bool(int(m.group(1), 16) & select.EPOLLIN)
    return False


def daemon_sleeps():
    return open("/proc/%d/stat" % daemon_pid).read().rsplit(")", 1)[1].split()[0] == "S"


def metric(name):
    for line in call("metrics")["result"]["text"].splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


class Stranger:
    """A child process as nobody (uid 65534), whose connections are nobody's to the daemon, talking
    with this (root) process in JSON lines: work(stranger) runs in the child, say/hear on both sides."""

    def __init__(self, work):
        down, up = os.pipe(), os.pipe()
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        self.pid = os.fork()
        if self.pid == 0:
            code = 1
            try:
                os.close(down[1])
                os.close(up[0])
                self.inp, self.out = os.fdopen(down[0]), os.fdopen(up[1], "w")
                resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a flood's worth of sockets
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                work(self)
                code = 0
            except BaseException:
                traceback.print_exc()
            os._exit(code)
        os.close(down[0])
        os.close(up[1])
        self.inp, self.out = os.fdopen(up[0]), os.fdopen(down[1], "w")

    def say(self, obj):
        self.out.write(json.dumps(obj) + "\n")
        self.out.flush()

    def hear(self):
        line = self.inp.readline()
        return json.loads(line) if line else None

    def end(self):
        """Its exit status, once it is gone."""
        self.out.close()
        return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])


def limit_counts():
    """cosched_client_limit_total by its label."""
    counts = {}
    for line in call("metrics")["result"]["text"].splitlines():
        m = re.match(r'cosched_client_limit_total\{limit="(\w+)"\} (\d+)', line)
        if m:
            counts[m.group(1)] = int(m.group(2))
    return counts


def clients():
    return call("status")["result"]["clients"]  # this call is one


def fd_room():
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1] - 100


def case_flood():
    # flood.yaml: 16 connections of a user served, 184 more waiting; the flood holds them all and
    # is refused the rest, while root's prolog registers a job
    per_user, waiting = 16, 184
    wanted = min(1200, fd_room())
    expected = ("uid 65534 has %d connections open: limits.connections_per_user %d + limits.waiting_per_user %d; "
                "try again when one closes" % (per_user + waiting, per_user, waiting))

    def flood(me):
        held, replies = [], []
        for _ in range(wanted):
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)  # blocking: waits while the daemon's backlog is full
            s.setblocking(False)
            held.append(s)

        def sort_out():
            # a refused connection has its answer and is closed; a kept one has nothing to read
            for s in list(held):
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    continue
                replies.append(json.loads(data[4:]) if len(data) > 4 else None)
                held.remove(s)
                s.close()
            return len(held) <= per_user + waiting
        wait_until(sort_out, 120)
        me.say({"held": len(held), "refused": len(replies),
                "wrong": [r for r in replies if not r or r["error"]["code"] != "EBUSY" or r["error"]["message"] != expected][:3]})
        me.hear()  # root has registered its job
        for s in held:
            s.close()

    before = limit_counts()
    stranger = Stranger(flood)
    report = stranger.hear() or {}
    check("a flood of %d connections by one user: %s kept (its share and its waiting ones), the rest refused"
          % (wanted, report.get("held")), report.get("held") == per_user + waiting)
    check("each refused connection got EBUSY naming the limits (%s; first wrong: %s)"
          % (report.get("refused"), report.get("wrong")), report.get("refused") == wanted - per_user - waiting
          and report.get("wrong") == [])
    cosched = [os.environ["HOSTILE_COSCHED"], "--socket", path]
    try:  # Slurm's PrologEpilogTimeout: a prolog that takes longer fails the job
        register = subprocess.run(cosched + ["job", "register", "--job", "flood-victim", "--uid", "0", "--role",
                                             "cotenant", "--cores", "1", "--policy", "cores"],
                                  capture_output=True, text=True, timeout=60)
        rc, out = register.returncode, register.stderr.strip()
    except subprocess.TimeoutExpired:
        rc, out = "timeout", ""
    check("meanwhile root's prolog registers its job (exit %s %s)" % (rc, out), rc == 0)
    after = limit_counts()
    check("the refusals are counted (%s)" % after, after.get("connections", 0) - before.get("connections", 0)
          == report.get("refused") and after.get("waiting", 0) - before.get("waiting", 0) == waiting)
    stranger.say({})
    check("the flood ends cleanly", stranger.end() == 0)
    check("the daemon is up, its clients back to none", wait_until(lambda: clients() <= 1))
    release = subprocess.run(cosched + ["job", "release", "--job", "flood-victim"], capture_output=True)
    check("root's job is released", release.returncode == 0)


def case_waiting():
    # 100 clients of one user at once, more than its 16 served: the others wait their turn
    count, per_user = 100, 16

    def many(me):
        socks = []
        for _ in range(count):
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            s.sendall(request("ping"))
            socks.append(s)
        me.say({})
        me.hear()  # the daemon holds them all
        answered = 0
        for s in socks:  # oldest first: the order in which waiting ones are served
            s.settimeout(120)
            r = reply(s)
            answered += bool(r and r["ok"])
            s.close()
        me.say({"answered": answered})

    before = limit_counts()
    stranger = Stranger(many)
    stranger.hear()
    check("the daemon holds all %d clients of the user" % count, wait_until(lambda: clients() >= count + 1))
    stranger.say({})
    answered = (stranger.hear() or {}).get("answered")
    check("every one of the %d clients is answered (%s): they waited, none failed" % (count, answered),
          answered == count)
    waited = limit_counts().get("waiting", 0) - before.get("waiting", 0)
    check("the %d beyond its share were counted as waiting (%d)" % (count - per_user, waited),
          waited == count - per_user)
    check("the user's clients end cleanly", stranger.end() == 0)


def case_rate():
    # flood.yaml: 50 requests a second (bursts of 100); 300 at once are delayed, none refused
    count = 300

    def burst(me):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(120)
        s.connect(path)
        s.sendall(request("ping") * count)
        answered = 0
        for _ in range(count):
            r = reply(s)
            answered += bool(r and r["ok"])
        s.close()
        me.say({"answered": answered})

    before = limit_counts()
    stranger = Stranger(burst)
    answered = (stranger.hear() or {}).get("answered")
    check("all %d requests of a user over its rate are answered (%s)" % (count, answered), answered == count)
    delayed = limit_counts().get("rate", 0) - before.get("rate", 0)
    check("the delays are counted (%d)" % delayed, delayed >= 1)
    check("the user's client ends cleanly", stranger.end() == 0)


def case_bytes():
    # Each byte waits until the daemon has read the one before, so that every read it makes
    # finds one byte: the frame is put together from 30-odd reads. client_timeout (60 s in
    # test_hostile.sh) bounds the whole request, not each byte.
    s = conn()
    for b in request("ping"):
        s.sendall(bytes([b]))
        wait_until(lambda: unread(s) == 0)
    r = reply(s)
    check("a request sent one byte at a time is answered", r and r["ok"])


def case_huge():
    s = conn()
    s.sendall(struct.pack(">I", 1 << 31) + b"{}")
    r = reply(s)
    check("a frame length of 2^31 is refused before any allocation, and closed",
          r and r["error"]["code"] == "EPROTO" and closed(s))


def case_unread():
    fds = daemon_fds()
    s = conn()
    # ~2 MiB of replies queued for a client that never reads them: more than the daemon keeps
    sent = 0
    try:
        for _ in range(40):
            s.sendall(request("status") * 500)
            sent += 500
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    check("a client that never reads its replies is dropped (after %d requests)" % sent, closed(s))
    s.close()
    check("others are served meanwhile and after", served())
    check("no descriptor is left behind (%d before, %d after)" % (fds, fds_back_to(fds)), fds_back_to(fds) <= fds)


def case_fds():
    fds = daemon_fds()
    limit = int([l for l in open("/proc/%d/limits" % daemon_pid) if l.startswith("Max open files")][0].split()[3])
    held = []
    for _ in range(limit + 20):  # more than the daemon can hold
        held.append(conn())
    # every connection is accepted or queued; a few requests make the daemon accept until EMFILE
    for s in held[:8]:
        s.sendall(request("ping"))
    # Out of descriptors with connections queued, the listening socket stays readable: the daemon
    # must take it out of its epoll set and sleep, not spin on accept. A spinning daemon never
    # shows both at once; this one does until the test lets the clients go.
    check("at its descriptor limit (%d) the daemon stops polling the listening socket and sleeps" % limit,
          wait_until(lambda: not daemon_polls_listening_socket() and daemon_sleeps()))
    waiting = held[-1]
    waiting.sendall(request("ping"))
    for s in held[:-1]:
        s.close()
    r = reply(waiting)
    check("a client queued while the daemon was out of descriptors is served once some are free",
          r and r["ok"])
    waiting.close()
    check("new clients are served after the limit", served())
    pauses = metric("cosched_accept_pauses_total")
    st = call("status")["result"]  # its uptime after the pauses were read
    # a pause ends at a tick (one a second: no more of them than seconds of uptime) or when a
    # client leaves; pausing and resuming at every turn of the loop would count thousands
    check("the pauses are counted, each ended by a tick or a leaving client (%s in %.0f s, %d clients)"
          % (pauses, st["uptime"], len(held)), pauses is not None and 1 <= pauses <= st["uptime"] + len(held) + 1)
    def clients():
        return call("status")["result"]["clients"]  # this call is one
    check("no client is left counted once they all left", wait_until(lambda: clients() <= 1))
    check("descriptors back to %d (were %d)" % (fds_back_to(fds), fds), fds_back_to(fds) <= fds)


def case_strangers():
    # run as a user who is not an operator: every change is refused, nothing changes
    before = call("job.list")["result"]["jobs"]
    attempts = {
        "job.register": {"job": "x1", "uid": os.getuid(), "role": "trainer"},
        "job.release": {"job": "victim"},
        "job.confine": {"job": "victim"},
        "run.start": {"job": "victim", "argv": ["/bin/true"]},
        "run.stop": {"id": 1},
        "report": {"job": "victim", "step_time": 0.1},
        "baseline.set": {"job": "victim", "step_time": 0.1},
        "guard.set": {"job": "victim-cotenant", "share": 0},
    }
    for method, params in attempts.items():
        r = call(method, params)
        check("a stranger's %s is refused (%s)" % (method, r["error"]["code"] if r and not r["ok"] else r),
              r and not r["ok"] and r["error"]["code"] == "EPERM")
    after = call("job.list")["result"]["jobs"]
    check("the registry is unchanged", before == after)


def case_control():
    for job in ["a\nb", "a\x1b[31mb", "a\x00b", "../etc", "a" * 64]:
        r = call("job.register", {"job": job, "uid": 0, "role": "cotenant", "cores": 1})
        # a NUL is refused by the JSON decoder already (EPROTO), the rest by the id check
        check("job id %r is refused (%s)" % (job[:12], r and r["error"]["code"]),
              r and not r["ok"] and r["error"]["code"] in ("EINVAL", "EPROTO"))
    value = "line1\nline2\x1b[31m\x01\u00e9"
    r = call("run.start", {"job": "victim-cotenant", "argv": ["/bin/sh", "-c", 'printf %s "$ODD" > "$OUT"'],
                           "env": {"ODD": value, "OUT": os.environ["HOSTILE_OUT"]}})
    check("an env value with control characters starts a run", r and r["ok"])
    wait_until(lambda: os.path.exists(os.environ["HOSTILE_OUT"]) and
               call("run.list")["result"]["runs"][-1]["state"] != "running")
    got = open(os.environ["HOSTILE_OUT"], encoding="utf-8").read() if os.path.exists(os.environ["HOSTILE_OUT"]) else None
    check("the run sees the value byte for byte", got == value)


def send_refused(data):
    """Send what the daemon refuses after its header: it answers and closes mid-send."""
    s = conn()
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the refusal is already in our receive queue
    return s, reply(s)


def case_big():
    s, r = send_refused(request("job.register", {"job": "j" * (1 << 20), "uid": 0, "role": "cotenant"}))
    check("a 1 MiB job id is refused as an oversize frame, and closed",
          r and r["error"]["code"] == "EPROTO" and closed(s))
    s, r = send_refused(request("run.start", {"job": "none", "argv": ["/bin/true"], "env": {"BIG": "v" * (1 << 20)}}))
    check("a 1 MiB env value is refused the same way", r and r["error"]["code"] == "EPROTO" and closed(s))
    r = call("run.start", {"job": "none", "argv": ["/bin/true"], "env": {"BIG": "v" * 60000}})
    check("a 60 kB env value within a frame gets an answer (%s)" % (r["error"]["code"] if r and not r["ok"] else "ok"),
          r is not None)


for case in sys.argv[3:]:
    globals()["case_" + case]()
    check("after '%s' a well-behaved client is served" % case, served())
for name, passed in results:
    print(("ok" if passed else "not ok") + " - " + name)
