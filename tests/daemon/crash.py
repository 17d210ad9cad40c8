"""crash: the busy workload of tests/daemon/test_crash.sh and the check after each kill -9.

  crash.py work SOCKET JOURNAL      register and release a co-tenant job (each request makes the
                                    daemon save its state) until killed, retrying while the
                                    daemon is down; JOURNAL gets "try-reg ID" before a request
                                    and "reg ID" once it is acknowledged (and the same for rel)
  crash.py check SOCKET JOURNAL RUNS   after a restart: every acknowledged registration that no
                                    release was tried for is there, every acknowledged release
                                    is not, and the runs in RUNS (lines "ID PID") are each listed
                                    once, still running under the same pid (adopted again).
"""
import json, os, socket, struct, sys, time

mode, path, journal = sys.argv[1], sys.argv[2], sys.argv[3]


def call(method, params=None):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)  # generous: a reply comes as soon as the daemon gets to it
    s.connect(path)
    body = json.dumps({"v": 1, "method": method, "params": params or {}}).encode()
    s.sendall(struct.pack(">I", len(body)) + body)
    def exactly(n):
        b = b""
        while len(b) < n:
            c = s.recv(n - len(b))
            if not c:
                raise ConnectionError("closed")
            b += c
        return b
    n = struct.unpack(">I", exactly(4))[0]
    r = json.loads(exactly(n))
    s.close()
    return r


def work():
    log = open(journal, "a", buffering=1)
    live, n = [], 0
    while True:
        try:
            if not live:  # one job at a time: the node has one core left for them
                job = "w%d-%d" % (os.getpid(), n)
                n += 1
                log.write("try-reg %s\n" % job)
                r = call("job.register", {"job": job, "uid": 0, "role": "cotenant", "policy": "cores", "cores": 1})
                if r["ok"]:
                    log.write("reg %s\n" % job)
                    live.append(job)
                else:  # a registration whose reply a kill cut off holds the core: release it
                    prefix = "w%d-" % os.getpid()
                    live = [j["job"] for j in call("job.list")["result"]["jobs"] if j["job"].startswith(prefix)]
            else:
                job = live.pop(0)
                log.write("try-rel %s\n" % job)
                r = call("job.release", {"job": job})
                if r["ok"]:
                    log.write("rel %s\n" % job)
        except (OSError, ValueError):
            time.sleep(0.02)  # the daemon is down (or went down mid-reply): try again


def check():
    runs_file = sys.argv[4]
    acked, tried_release, released = set(), set(), set()
    for line in open(journal):
        word, _, job = line.strip().partition(" ")
        if word == "reg":
            acked.add(job)
        elif word == "try-rel":
            tried_release.add(job)
        elif word == "rel":
            released.add(job)
    jobs = {j["job"] for j in call("job.list")["result"]["jobs"]}
    lost = sorted(acked - tried_release - jobs)
    back = sorted(released & jobs)
    print("jobs: %d acknowledged, %d released, %d registered now" % (len(acked), len(released), len(jobs)))
    ok = True
    if lost:
        print("LOST acknowledged registrations: %s" % lost)
        ok = False
    if back:
        print("BACK after an acknowledged release: %s" % back)
        ok = False
    listed = call("run.list")["result"]["runs"]
    for line in open(runs_file):
        run_id, pid = map(int, line.split())
        same = [r for r in listed if r["id"] == run_id]
        if len(same) != 1 or same[0]["state"] != "running" or same[0]["pid"] != pid:
            print("run %d (pid %d): listed as %s" % (run_id, pid, same))
            ok = False
    ids = [r["id"] for r in listed]
    if len(ids) != len(set(ids)):
        print("a run is listed twice: %s" % ids)
        ok = False
    sys.exit(0 if ok else 1)


work() if mode == "work" else check()
