"""checks.py - what the Python end-to-end tests share: the failures so far,
fail() to record one (a FAIL line), ok() to print a check that passed. Each
test imports it from its own folder (Python puts a script's folder on its
path) and exits 1 when `failures` is not empty."""

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL " + msg)


def ok(msg):
    print("ok   " + msg)
