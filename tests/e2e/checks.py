"""checks.py - what the Python end-to-end tests share: the failures so far,
fail() to record one (a FAIL line), ok() to print a check that passed. Each
test imports it from its own folder (Python puts a script's folder on its
path) and ends with finish(), or exits 1 itself when `failures` is not empty."""
import sys

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL " + msg)


def ok(msg):
    print("ok   " + msg)


def finish(name):
    """Says how the test ended; exit status 1 after any failure."""
    if failures:
        print("%s: %d failed" % (name, len(failures)))
        sys.exit(1)
    print("%s: all passed" % name)
