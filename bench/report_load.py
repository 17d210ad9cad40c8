# report_load.py: how many step reports a second the cosched Python module gets through — one
# Reporter, report_step back to back for a while (socket and job from the environment).
import sys
import time

import cosched

seconds = float(sys.argv[1])
rep = cosched.Reporter(raise_errors=True)
rep.report_step(0.1)  # the first report connects: outside the timed window, once per job
reports = 0
t0 = time.monotonic()
end = t0 + seconds
while True:
    rep.report_step(0.1)
    reports += 1
    t = time.monotonic()
    if t >= end:
        break
print("reports=%d seconds=%.3f reports_per_s=%.0f" % (reports, t - t0, reports / (t - t0)))
rep.close()
