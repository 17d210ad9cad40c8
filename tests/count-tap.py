#!/usr/bin/env python3
# count-tap: add up the individual results of a meson test run from its testlog.json:
# each TAP "ok"/"not ok" line counts once; a test with no TAP lines counts by its own result.
import json
import re
import sys

passed = failed = skipped = 0
for path in sys.argv[1:]:
    with open(path) as log:
        for line in log:
            entry = json.loads(line)
            out = entry.get("stdout") or ""
            oks = len(re.findall(r"^ok\b(?!.*# SKIP)", out, re.M))
            skips = len(re.findall(r"^ok\b.*# SKIP", out, re.M))
            not_oks = len(re.findall(r"^not ok\b(?!.*# TODO)", out, re.M))
            bad = entry["result"] not in ("OK", "SKIP", "EXPECTEDFAIL")
            if oks + not_oks + skips == 0:
                passed += not bad and entry["result"] != "SKIP"
                skipped += entry["result"] == "SKIP"
                failed += bad
            else:
                passed += oks
                skipped += skips
                # A test that died after some "ok" lines still failed once.
                failed += not_oks if not_oks or not bad else 1
print(f"{passed} {failed} {skipped}")
