"""access_matrix: every method of the protocol called as every actor of docs/security.md, each
answer checked against that page's permission table (read from the file, so the table and the
daemon cannot drift apart), and every refusal checked to change nothing. One TAP line per check.

Usage (as root, tests/daemon/test_access.sh starts the daemon):
    access_matrix.py SOCKET SECURITY_MD matrix|private-redact|private-hide
Actors: root (uid 0), an operator (uid 65530, in operators.uids), the trainer's owner (65531,
owns trainer t1), the co-tenant's owner (65532, owns co-tenant c1), another user (65533)."""
import json, os, re, socket, struct, sys

sock_path, doc_path, case = sys.argv[1], sys.argv[2], sys.argv[3]
OPERATOR, TRAINER_OWNER, COTENANT_OWNER, OTHER = 65530, 65531, 65532, 65533
results = []


def check(name, cond):
    results.append((bool(cond), name))


def call_as(uid, method, params=None):
    """One request over a fresh connection made by a child that became uid (and its gid): the
    daemon sees that uid in SO_PEERCRED, as it would a user's."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            if uid:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(60)
            s.connect(sock_path)
            req = {"v": 1, "method": method}
            if params is not None:
                req["params"] = params
            data = json.dumps(req).encode()
            s.sendall(struct.pack(">I", len(data)) + data)
            head = b""
            while len(head) < 4:
                head += s.recv(4 - len(head))
            n = struct.unpack(">I", head)[0]
            body = b""
            while len(body) < n:
                body += s.recv(n - len(body))
            os.write(w, body)
        except Exception as e:  # the parent reads an error object
            os.write(w, json.dumps({"ok": False, "error": {"code": "CLIENT", "message": repr(e)}}).encode())
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks))


def root(method, params=None):
    return call_as(0, method, params)


def permission_table():
    """{method: {actor column: 'yes'|'no'}} from docs/security.md's table."""
    text = open(doc_path, encoding="utf-8").read()
    lines = text[text.index("<!-- permission-table"):].splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("| method"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    header, rows = lines[start], [l for l in lines[start:end] if l.startswith("| `")]
    cols = [c.strip() for c in header.strip("|").split("|")]
    out = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        out[cells[0].strip("`")] = dict(zip(cols[1:6], cells[1:6]))
    return out


# Volatile fields: what moves on its own between two looks (clocks, counters of the daemon).
VOLATILE = {"uptime", "clients", "age", "since", "last_change", "time", "started", "ended", "baseline_age_seconds"}


def settled():
    """Once the runs root started have ended: a run that ends between two looks is no change."""
    import time
    for _ in range(6000):
        if all(r["state"] != "running" for r in root("run.list")["result"]["runs"]):
            return
        time.sleep(0.01)


def snapshot():
    """Every job and run as root sees them, less what moves by itself."""
    settled()
    def strip(o):
        if isinstance(o, dict):
            return {k: strip(v) for k, v in o.items() if k not in VOLATILE}
        if isinstance(o, list):
            return [strip(v) for v in o]
        return o
    return json.dumps(strip({"jobs": root("job.list")["result"]["jobs"], "runs": root("run.list")["result"]["runs"],
                             "stats": root("stats")["result"]["jobs"]}), sort_keys=True)


def changes(before, after):
    """The first lines that differ, for the message of a failed check."""
    import difflib
    a, b = (json.dumps(json.loads(x), indent=0).splitlines() for x in (before, after))
    diff = [l for l in difflib.unified_diff(a, b, lineterm="", n=0) if l[:1] in "+-" and l[:3] not in ("+++", "---")]
    return " (changed: %s)" % " ".join(diff[:6]) if diff else ""


def register_jobs():
    """t1 and c1 registered (again, after a release the table allowed)."""
    have = {j["job"] for j in root("job.list")["result"]["jobs"]}
    for params in ({"job": "t1", "uid": TRAINER_OWNER, "role": "trainer", "policy": "cores"},
                   {"job": "c1", "uid": COTENANT_OWNER, "role": "cotenant", "policy": "cores", "cores": 1}):
        if params["job"] not in have:
            r = root("job.register", params)
            assert r["ok"], r
            if params["job"] == "t1":  # a baseline measured from steps alone: its owner may set one near it
                for _ in range(25):
                    root("report", {"job": "t1", "step_time": 0.1})


def params_for(method, job, actor):
    return {
        "job.register": {"job": "new-%d" % actor, "uid": actor, "role": "cotenant", "policy": "cores", "cores": 1},
        "job.release": {"job": job},
        "job.get": {"job": job},
        "job.confine": {"job": job},
        "run.start": {"job": job, "argv": ["/bin/true"]},
        "run.stop": {"id": 999999},
        "report": {"job": job, "step_time": 0.1},
        "phase": {"job": job, "phase": "train"},
        "baseline.set": {"job": job, "step_time": 0.1},
        "guard.set": {"job": job, "share": 0.5},
    }.get(method)


def case_matrix():
    table = permission_table()
    methods = root("ping")  # the daemon is up
    check("the table in %s lists 18 methods (%d)" % (os.path.basename(doc_path), len(table)), len(table) == 18)
    actors = [("root", 0, ["t1", "c1"]), ("operator", OPERATOR, ["t1", "c1"]),
              ("trainer's owner", TRAINER_OWNER, ["t1"]), ("co-tenant's owner", COTENANT_OWNER, ["c1"]),
              ("other user", OTHER, ["t1", "c1"])]
    for method, allowed in table.items():
        for column, uid, jobs in actors:
            expect = allowed[column]
            for job in jobs:
                register_jobs()
                before = snapshot()
                r = call_as(uid, method, params_for(method, job, uid))
                code = None if r.get("ok") else r["error"]["code"]
                what = "%s as %s on %s: %s" % (method, column, job, code or "ok")
                if expect == "yes":
                    check(what + " (allowed by the table)", code not in ("EPERM", "CLIENT", None) or r.get("ok"))
                    if r.get("ok") and method == "job.register":
                        root("job.release", {"job": "new-%d" % uid})
                else:
                    msg = r["error"]["message"] if code else ""
                    check(what + " (refused by the table, naming the uid)",
                          code == "EPERM" and msg.startswith("uid %d may not" % uid))
                    after = snapshot()
                    check(method + " as " + column + " on " + job + " changed nothing" + changes(before, after),
                          after == before)
    check("the daemon is still up", root("ping").get("ok"))
    metrics = root("metrics")["result"]["text"]
    m = re.search(r"^cosched_requests_denied_total (\d+)$", metrics, re.M)
    check("the refusals are counted (%s)" % (m and m.group(1)), m and int(m.group(1)) > 0)


def walk(o):
    """Every key and every string value in a reply, at any depth."""
    if isinstance(o, dict):
        for k, v in o.items():
            yield k
            yield from walk(v)
    elif isinstance(o, list):
        for v in o:
            yield from walk(v)
    elif isinstance(o, str):
        yield o


def case_private_redact():
    register_jobs()
    r = root("run.start", {"job": "c1", "argv": ["/bin/sh", "-c", "exit 0", "secret-argument"]})
    check("root starts a run of c1", r.get("ok"))
    for method, params, what in (("job.list", None, "jobs"), ("run.list", None, "runs"), ("stats", None, "jobs"),
                                 ("job.get", {"job": "c1"}, None)):
        seen = call_as(OTHER, method, params)
        body = seen.get("result")
        check("%s as another user answers (%s)" % (method, seen.get("ok")), seen.get("ok"))
        bad_keys = {"uid", "argv", "env", "stdout", "pid", "cgroup"} & set(walk(body))
        check("%s shows another user no %s" % (method, sorted(bad_keys) or "uid, argv, env or path"), not bad_keys)
        paths = [s for s in walk(body) if "/" in s]
        check("%s shows another user no path (%s)" % (method, paths[:2]), not paths)
        check("%s shows no argument of another user's run" % method, "secret-argument" not in json.dumps(body))
        if what:
            check("%s still lists others' %s, redacted" % (method, what), len(body[what]) > 0)
    own = call_as(COTENANT_OWNER, "job.get", {"job": "c1"})
    check("the owner sees their job whole (uid %s)" % own["result"].get("uid"),
          own["result"].get("uid") == COTENANT_OWNER)
    runs = call_as(COTENANT_OWNER, "run.list")["result"]["runs"]
    check("the owner sees their run's argv", any("secret-argument" in r.get("argv", []) for r in runs))
    full = call_as(OPERATOR, "job.get", {"job": "t1"})["result"]
    check("an operator sees every job whole", full.get("uid") == TRAINER_OWNER)


def case_private_hide():
    listed = [j["job"] for j in call_as(OTHER, "job.list")["result"]["jobs"]]
    check("with hide, another user lists no job of others (%s)" % listed, listed == [])
    g = call_as(OTHER, "job.get", {"job": "t1"})
    check("with hide, job get of another's job is ENOENT (%s)" % (g.get("error") or {}).get("code"),
          not g.get("ok") and g["error"]["code"] == "ENOENT")
    check("with hide, run list shows another user no run", call_as(OTHER, "run.list")["result"]["runs"] == [])
    check("with hide, stats shows another user no job", call_as(OTHER, "stats")["result"]["jobs"] == [])
    mine = [j["job"] for j in call_as(TRAINER_OWNER, "job.list")["result"]["jobs"]]
    check("with hide, a trainer's owner lists their own job only (%s)" % mine, mine == ["t1"])
    m = call_as(OTHER, "metrics")
    check("with hide, another user may not read the metrics, which name every job (%s)"
          % (m.get("error") or {}).get("message"),
          not m.get("ok") and m["error"]["code"] == "EPERM" and "private_jobs is hide" in m["error"]["message"])
    check("with hide, a trainer's owner may not either", not call_as(TRAINER_OWNER, "metrics").get("ok"))
    check("with hide, an operator may", call_as(OPERATOR, "metrics").get("ok"))
    r = call_as(OTHER, "job.release", {"job": "t1"})
    check("with hide, a change to another's job is ENOENT, as for no job: a refusal tells nothing (%s)"
          % (r.get("error") or {}).get("code"), not r.get("ok") and r["error"]["code"] == "ENOENT")
    for method in ("status", "stats", "job.list", "run.list"):
        body = json.dumps(call_as(TRAINER_OWNER, method).get("result"))
        check("with hide, %s names no job of another user to a trainer's owner" % method,
              '"c1"' not in body and "65532" not in body)
    check("with hide, root lists every job", {"t1", "c1"} <= {j["job"] for j in root("job.list")["result"]["jobs"]})


{"matrix": case_matrix, "private-redact": case_private_redact, "private-hide": case_private_hide}[case]()
for good, name in results:
    print(("ok - " if good else "not ok - ") + name)
sys.exit(0 if all(g for g, _ in results) else 1)
