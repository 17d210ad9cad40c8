"""hostile: clients that misbehave on purpose against a running coschedd, one TAP line each
(tests/daemon/test_hostile.sh starts the daemon). Usage: hostile.py SOCKET DAEMON_PID CASE...
Cases: bytes, huge, unread, fds, strangers, control, big. Every case ends by checking that a
well-behaved client is still served."""
import json, os, socket, struct, sys, time

path, daemon_pid = sys.argv[1], int(sys.argv[2])
results = []


def conn(timeout=5):
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
    """The daemon's descriptor count once it is back to fds, or after 5 s: it closes a
    client's descriptor when it next reads that client's EOF, not when the client leaves."""
    for _ in range(100):
        n = daemon_fds()
        if n <= fds:
            return n
        time.sleep(0.05)
    return n


def daemon_cpu_seconds():
    fields = open("/proc/%d/stat" % daemon_pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def case_bytes():
    s = conn()
    for b in request("ping"):
        s.sendall(bytes([b]))
        time.sleep(0.01)
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
    s = conn(timeout=10)
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
    time.sleep(1.0)
    cpu0 = daemon_cpu_seconds()
    time.sleep(1.0)
    spun = daemon_cpu_seconds() - cpu0
    check("at its descriptor limit (%d) the daemon waits instead of spinning (%.2f s CPU in 1 s)" % (limit, spun),
          spun < 0.5)
    waiting = held[-1]
    waiting.sendall(request("ping"))
    for s in held[:-1]:
        s.close()
    r = reply(waiting)
    check("a client queued while the daemon was out of descriptors is served once some are free",
          r and r["ok"])
    waiting.close()
    time.sleep(0.2)
    check("new clients are served after the limit", served())
    st = call("status")["result"]
    check("no client is left counted (%d)" % st["clients"], st["clients"] <= 1)
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
    for _ in range(100):
        if os.path.exists(os.environ["HOSTILE_OUT"]) and call("run.list")["result"]["runs"][-1]["state"] != "running":
            break
        time.sleep(0.05)
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
