#!/usr/bin/env python3
"""cli_options.py NPUSIM - every option a command's --help documents is accepted
by that command, and every option another command documents is refused by it
with "unknown option --NAME" (exit 2): the help texts match what the parser
takes. A short alias the help lists ("-o, --output FILE") is taken as its long
option is. Options are read from each command's "options:" section; a documented
option must not be refused as unknown (its value may still be refused later,
or a required option found missing). Python standard library only."""
import os
import re
import subprocess
import sys
import tempfile


def run(npusim, args, cwd):
    # in a scratch directory: "--output x" may write x
    p = subprocess.run([npusim] + args, capture_output=True, text=True, timeout=60, cwd=cwd)
    return p.returncode, p.stderr


def commands(npusim):
    out = subprocess.run([npusim, "--help"], capture_output=True, text=True, check=True).stdout
    block = out.split("commands:")[1]
    return [m.group(1) for m in re.finditer(r"^  (\w+)\s", block, re.M)]


def options(npusim, cmd):
    """{name: takes_value} from the command's help, and {letter: name} of its
    short aliases."""
    out = subprocess.run([npusim, cmd, "--help"], capture_output=True, text=True,
                         check=True).stdout
    opts, shorts = {}, {}
    for line in out.split("\noptions:\n", 1)[1].splitlines():
        for m in re.finditer(r"(?:^  |, )(?:-([a-z]), )?--([a-z][a-z-]*)( [A-Z\[])?", line):
            opts[m.group(2)] = m.group(3) is not None and not m.group(3).strip().startswith("[")
            if m.group(1):
                shorts[m.group(1)] = m.group(2)
    return opts, shorts


def main():
    npusim = os.path.abspath(sys.argv[1])
    scratch = tempfile.TemporaryDirectory()
    parsed = {c: options(npusim, c) for c in commands(npusim)}
    per_cmd = {c: p[0] for c, p in parsed.items()}
    universe = {}
    for opts in per_cmd.values():
        universe.update(opts)
    failures = checked = 0
    for cmd, (opts, shorts) in parsed.items():
        for letter, name in sorted(shorts.items()):
            if name == "help":
                continue
            args = [cmd, f"-{letter}"] + (["x"] if opts[name] else []) + ["--time-limit", "30"]
            rc, err = run(npusim, args, scratch.name)
            checked += 1
            if f"unknown option -{letter}" in err or "unknown option --" + name in err:
                failures += 1
                print(f"FAIL npusim {cmd} documents -{letter} but refuses it: {err.strip()}")
    for cmd, opts in per_cmd.items():
        for name, takes in sorted(universe.items()):
            if name == "help":
                continue
            args = [cmd, f"--{name}"] + (["x"] if takes else []) + ["--time-limit", "30"]
            rc, err = run(npusim, args, scratch.name)
            unknown = f"unknown option --{name}" in err
            checked += 1
            if name in opts and unknown:
                failures += 1
                print(f"FAIL npusim {cmd} documents --{name} but refuses it: {err.strip()}")
            if name not in opts and not (unknown and rc == 2):
                failures += 1
                print(f"FAIL npusim {cmd} does not document --{name} but takes it "
                      f"(exit {rc}): {err.strip()[:200]}")
    print(f"cli_options: {checked} command/option pairs, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
