# tap_runner: the TAP loop of the Python tests here — @test registers a function, run() calls
# each in order, prints "ok"/"not ok" with the traceback as comments, then the plan.
import sys
import traceback

tests = []


def test(fn):
    tests.append(fn)
    return fn


def run_tests():
    """Run every registered test; 0 when all passed."""
    failed = 0
    for n, fn in enumerate(tests, 1):
        try:
            fn()
            print("ok %d - %s" % (n, fn.__name__.replace("_", " ")))
        except Exception:
            failed += 1
            print("not ok %d - %s" % (n, fn.__name__.replace("_", " ")))
            print("\n".join("# " + line for line in traceback.format_exc().splitlines()))
        sys.stdout.flush()
    print("1..%d" % len(tests))
    return 0 if failed == 0 else 1
