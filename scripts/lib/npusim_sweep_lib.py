"""npusim_sweep_lib.py - what npusim-sweep, npusim-plan and npusim-plot share.

A sweep spec (docs/sweeps.md) names one npusim command, a base system and
workload, and axes over config keys (`parallel.tp`) or command options
(`--ranks`). This module checks the spec against `npusim schema` and the
command's `--help` before anything runs, expands the axes into points (grid,
zip, explicit lists, filters), runs the points in parallel, keeps one result
file per point (so an interrupted sweep resumes) and merges them into a CSV and
a JSONL table whose bytes depend only on the spec.

It does not interpret npusim's results beyond flattening them into columns; it
does not retry failed points (they are results too) nor schedule across
machines (npusim-sweep --slurm writes the batch job).

Standard library only. Every error is one line on stderr, prefixed with the
script's name: SpecError (bad input, exit 2) and the rest through run_main,
which also turns a signal into one line after killing the running npusim
children. Nothing prints a traceback.
"""

import argparse
import ast
import concurrent.futures
import csv
import difflib
import hashlib
import io
import itertools
import json
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

COMMANDS = ("train", "coll", "op", "replay", "serve", "cluster")
WORKLOAD_COMMANDS = ("train", "serve")  # the commands that take --workload (and its keys)
# arrays of objects in a command's JSON that become numbered columns (jobs.0.slowdown)
NUMBERED_ARRAYS = {"serve": ("pools",), "cluster": ("jobs",)}
SPEC_KEYS = ("description", "command", "system", "workload", "options", "set", "axes",
             "points", "filter")
# options the runner sets itself; an axis or the spec must not change them
RESERVED_OPTIONS = ("format", "output", "set", "help", "system", "workload", "chrome-trace")
# options whose value is a file: relative to the spec, and hashed by content
FILE_OPTIONS = ("trace", "matrix")
# options that name a file and a placement, FILE[@PLACEMENT], and repeat: a value is
# one such text or an array of them
JOB_OPTIONS = ("job",)

MAX_POINTS = 1_000_000        # grid points before the filter, and values of one range
MAX_SPEC_BYTES = 16 << 20     # a spec file
MAX_SPEC_DEPTH = 32           # nesting of arrays and objects in a spec
INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1  # integers in specs and filter arithmetic
MAX_FILTER_CHARS = 4096
MAX_FILTER_DEPTH = 64         # nesting of a filter's expression tree
DEFAULT_TIMEOUT_S = 3600      # one point's npusim run (--timeout)
HELPER_TIMEOUT_S = 60         # npusim schema, --help, validate
MAX_JOBS = 1024
KILL_GRACE_S = 2.0            # SIGTERM to SIGKILL for children of an interrupted run


class SpecError(Exception):
    """Bad input: the message is the one line the user sees."""


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP reached the script (BaseException: no
    `except Exception` swallows it)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def one_line(text):
    """text with line breaks and other control characters escaped."""
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in str(text))


def say(msg):
    """One line on stderr, whatever the text holds."""
    end_progress()
    sys.stderr.write(one_line(msg) + "\n")
    sys.stderr.flush()


def fail(msg):
    """Prints one line and exits 2: bad input, nothing ran."""
    say(msg)
    sys.exit(2)


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one line (`PROG: message`), exit 2, no usage
    block; --help still prints the usage and options."""

    def error(self, message):
        fail(f"{self.prog}: {message}")

    def exit(self, status=0, message=None):
        if message:
            say(message.strip())
        sys.exit(status)


def count_arg(option, lo, hi=None):
    """An argparse type: an integer in [lo, hi]."""
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            v = None
        if v is None or v < lo or (hi is not None and v > hi):
            span = f"from {lo} to {hi}" if hi is not None else f">= {lo}"
            raise argparse.ArgumentTypeError(f"expected an integer {span}, found {shorten(text)}")
        return v
    parse.__name__ = option
    return parse


def float_0_to_1e9(text, what):
    """A number from 0 to 1e9 for an option, else argparse's error naming what it is."""
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not math.isfinite(v) or v < 0 or v > 1e9:
        raise argparse.ArgumentTypeError(f"expected {what} to 1e9, found {shorten(text)}")
    return v


def seconds_arg(text):
    """--timeout: seconds > 0, or 0 for none."""
    return float_0_to_1e9(text, "seconds from 0 (no limit)") or None


def add_timeout_arg(parser):
    parser.add_argument("--timeout", type=seconds_arg, default=float(DEFAULT_TIMEOUT_S),
                        metavar="SECONDS",
                        help=f"time limit of one point's npusim run; 0 for none "
                             f"(default {DEFAULT_TIMEOUT_S})")


def signal_name(signum):
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def run_main(prog, main, interrupted_hint=""):
    """Runs main() and exits with its status. SIGINT, SIGTERM and SIGHUP
    (unless ignored when the script started) kill the running npusim
    children and end the script with one line and 128 + the signal number.
    No exception prints a traceback: bad input is one line and exit 2, a
    file that cannot be written one line and exit 1, anything else one line
    naming the internal error and exit 1."""
    def interrupt(signum, _frame):
        for s in handled:  # cleanup is not interrupted again
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signum)
    handled = []
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(s) != signal.SIG_IGN:
            signal.signal(s, interrupt)
            handled.append(s)
    try:
        code = main()
        sys.stdout.flush()
    except SpecError as e:
        say(f"{prog}: {e}")
        code = 2
    except (Interrupted, KeyboardInterrupt) as e:
        signum = getattr(e, "signum", signal.SIGINT)
        for s in handled:
            signal.signal(s, signal.SIG_IGN)
        CHILDREN.stop()
        say(f"{prog}: interrupted ({signal_name(signum)}){interrupted_hint}")
        code = 128 + signum
    except BrokenPipeError as e:
        if e.filename is not None:  # a FIFO named as an output, its reader gone
            say(f"{prog}: cannot write {e.filename}: {e.strerror}")
        else:
            devnull = os.open(os.devnull, os.O_WRONLY)  # no second error when Python flushes
            os.dup2(devnull, sys.stdout.fileno())
            say(f"{prog}: cannot write to stdout: broken pipe")
        code = 1
    except OSError as e:
        what = e.filename if e.filename is not None else "output"
        say(f"{prog}: cannot write {what}: {e.strerror or e}")
        code = 1
    except RecursionError:
        say(f"{prog}: expected input nested less deeply, found more than Python can hold")
        code = 2
    except MemoryError:
        say(f"{prog}: out of memory")
        code = 1
    except Exception as e:  # a bug: still one line
        say(f"{prog}: internal error: {type(e).__name__}: {e}")
        code = 1
    finally:
        CHILDREN.stop()
    sys.exit(code)


# ---- children ---------------------------------------------------------------

class Outcome:
    """What one child did: exit status (negative: killed by that signal),
    stdout bytes, stderr text, and whether its time limit killed it."""

    def __init__(self, returncode, stdout, stderr, timed_out):
        self.returncode, self.stdout, self.stderr, self.timed_out = (
            returncode, stdout, stderr, timed_out)


class Stopped(Exception):
    """A child was not started: the run is being interrupted."""


class Children:
    """Every child this process started and has not reaped. Each runs in its
    own process group (so a terminal's Ctrl-C reaches only the script, which
    then stops them all, and a time limit kills whatever npusim started too);
    stop() kills them and refuses new ones."""

    def __init__(self):
        self.lock = threading.Lock()
        self.live = set()
        self.stopping = False

    def run(self, args, timeout=None):
        group = ({"process_group": 0} if sys.version_info >= (3, 11)
                 else {"start_new_session": True})
        with self.lock:
            if self.stopping:
                raise Stopped()
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, **group)
            self.live.add(proc)
        timed_out = False
        try:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                self._signal(proc, signal.SIGKILL)
                out, err = proc.communicate()
        except BaseException:  # interrupted while waiting here: the child goes too
            self._signal(proc, signal.SIGTERM)
            try:
                proc.wait(KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                self._signal(proc, signal.SIGKILL)
                proc.wait()
            raise
        finally:
            with self.lock:
                self.live.discard(proc)
        return Outcome(proc.returncode, out, err.decode("utf-8", "replace"), timed_out)

    @staticmethod
    def _signal(proc, signum):
        """Signals the child's process group while the child is unreaped
        (so the group id cannot have been reused)."""
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def stop(self):
        """SIGTERM to every running child's group, SIGKILL to those still
        there after KILL_GRACE_S; no child starts afterwards."""
        with self.lock:
            self.stopping = True
            procs = list(self.live)
            for p in procs:
                self._signal(p, signal.SIGTERM)
        deadline = time.monotonic() + KILL_GRACE_S
        while time.monotonic() < deadline:
            with self.lock:
                if not self.live & set(procs):
                    return len(procs)
            time.sleep(0.02)
        with self.lock:
            for p in self.live:
                self._signal(p, signal.SIGKILL)
        return len(procs)


CHILDREN = Children()


# ---- npusim ---------------------------------------------------------------

def find_npusim():
    """$NPUSIM, else `npusim` on PATH, else this checkout's build/npusim."""
    env = os.environ.get("NPUSIM")
    if env:
        if not os.path.isfile(env) or not os.access(env, os.X_OK):
            raise SpecError(f"$NPUSIM: expected an executable npusim, found {env!r}")
        return os.path.abspath(env)
    found = shutil.which("npusim")
    if found:
        return found
    local = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "npusim")
    if os.access(local, os.X_OK):
        return os.path.normpath(local)
    raise SpecError("npusim: expected npusim on PATH or in $NPUSIM, found neither")


def npusim_text(npusim, *args):
    """What npusim prints for args; SpecError (one line) if it fails."""
    r = CHILDREN.run([npusim, *args], HELPER_TIMEOUT_S)
    what = f"{npusim} {' '.join(args)}"
    if r.timed_out:
        raise SpecError(f"{what}: expected it to finish, found no answer after {HELPER_TIMEOUT_S} s")
    if r.returncode != 0:
        raise SpecError(f"{what}: expected it to run, found exit "
                        f"{r.returncode}: {last_line(r.stderr, 'no message')}")
    return r.stdout.decode("utf-8", "replace")


def schema_keys(npusim):
    """{"system": set, "workload": set} of every settable key, read from
    `npusim schema` (generated from the binary's key table, so never stale)."""
    text = npusim_text(npusim, "schema")
    keys = {"system": set(), "workload": set()}
    kind = None
    for line in text.splitlines():
        if line.startswith("## "):
            kind = line[3:].split()[0]
        elif kind in keys and line.startswith("| `"):
            cells = [c.strip() for c in line.split("|")]
            if not cells[2].startswith("section"):  # sections are not values
                keys[kind].add(cells[1].strip("`"))
    return keys


def command_options(npusim, command):
    """The long options `npusim COMMAND --help` lists, without the dashes."""
    text = npusim_text(npusim, command, "--help")
    opts = set()
    for line in text.splitlines():
        for word in line.split():
            if word.startswith("--") and len(word) > 2:
                opts.add(word.rstrip(",").lstrip("-"))
            else:
                break
    return opts


# ---- the spec ---------------------------------------------------------------

class _NotFinite(ValueError):
    def __init__(self, text):
        super().__init__(text)
        self.text = text


class _IntRange(ValueError):
    def __init__(self, text):
        super().__init__(text)
        self.text = text


def _finite_float(text):
    v = float(text)
    if not math.isfinite(v):
        raise _NotFinite(text)
    return v


def _bounded_int(text):
    if len(text.lstrip("-")) > 19 or not INT_MIN <= int(text) <= INT_MAX:
        raise _IntRange(text)
    return int(text)


def _no_constant(text):
    raise _NotFinite(text)


def file_kind(mode):
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def read_regular(path, limit, what):
    """The bytes of a regular file of at most `limit` bytes; SpecError
    otherwise (a FIFO or device is never opened: it could block)."""
    try:
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode):  # never open a FIFO or device: it could block
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            with open(fd, "rb") as f:
                st = os.fstat(fd)
                if stat.S_ISREG(st.st_mode):
                    data = f.read(limit + 1)
                    if data is None:  # /proc/kmsg and the like: a stream, not a file
                        raise SpecError(f"{path}: expected {what} (a regular file), found a "
                                        "file that blocks when read")
        if not stat.S_ISREG(st.st_mode):
            raise SpecError(f"{path}: expected {what} (a regular file), found {file_kind(st.st_mode)}")
        if st.st_size > limit:
            raise SpecError(f"{path}: expected {what} of at most {limit >> 20} MiB, found "
                            f"{st.st_size} bytes")
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}")
    if len(data) > limit:
        raise SpecError(f"{path}: expected {what} of at most {limit >> 20} MiB, found more")
    return data


def utf8_text(path, data):
    """data decoded as UTF-8; SpecError naming the line, column and byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        head = data[:e.start]
        line = head.count(b"\n") + 1
        col = e.start - (head.rfind(b"\n") + 1) + 1
        raise SpecError(f"{path}:{line}:{col}: expected UTF-8 text, found byte "
                        f"0x{data[e.start]:02x}")


def parse_json(path, text, what="a JSON sweep spec"):
    """JSON with finite numbers, 64-bit integers and bounded nesting."""
    try:
        return json.loads(text, parse_float=_finite_float, parse_int=_bounded_int,
                          parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise SpecError(f"{path}:{e.lineno}:{e.colno}: expected {what}, "
                        f"found a syntax error ({e.msg})")
    except _NotFinite as e:
        raise SpecError(f"{path}: expected finite numbers (JSON has no NaN or Infinity), "
                        f"found {e.text}")
    except _IntRange as e:
        raise SpecError(f"{path}: expected integers within 64 bits, found {e.text[:40]}")
    except RecursionError:
        raise SpecError(f"{path}: expected {what} nested at most {MAX_SPEC_DEPTH} deep, "
                        "found deeper")


def load_spec(path):
    """The spec file as a dict; SpecError if it is not a regular file of
    UTF-8 JSON holding an object."""
    data = read_regular(path, MAX_SPEC_BYTES, "a JSON sweep spec")
    spec = parse_json(path, utf8_text(path, data))
    if not isinstance(spec, dict):
        raise SpecError(f"{path}: expected a JSON object, found {type(spec).__name__}")
    return spec


def check_tree(where, spec):
    """Refuses nesting deeper than MAX_SPEC_DEPTH, and text that cannot
    reach npusim intact: control characters (outside `description`) and
    lone surrogates. Iterative: any depth is safe to walk."""
    todo = [(spec, "", 0)]
    while todo:
        value, path, depth = todo.pop()
        if depth > MAX_SPEC_DEPTH:
            raise SpecError(f"{where}: expected a spec nested at most {MAX_SPEC_DEPTH} deep, "
                            f"found deeper at {path or 'the top'}")
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    raise SpecError(f"{where}: {path or 'the top'}: expected text keys, found {k!r}")
                sub = f"{path}.{k}" if path else k
                _check_text(where, sub, k)
                if sub != "description":
                    todo.append((v, sub, depth + 1))
        elif isinstance(value, (list, tuple)):
            todo.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value))
        elif isinstance(value, str):
            _check_text(where, path, value)
        elif isinstance(value, float) and not math.isfinite(value):
            raise SpecError(f"{where}: {path}: expected a finite number, found {value}")


def _check_text(where, path, text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise SpecError(f"{where}: {path}: expected valid Unicode text, found a lone surrogate "
                        f"in {ascii(text)[:60]}")
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise SpecError(f"{where}: {path}: expected text without control characters, found "
                        f"{json.dumps(text)[:60]}")


def fmt(value):
    """A value as npusim's --set and the CSV write it: JSON for bools and
    lists, plain text otherwise."""
    if isinstance(value, (bool, list, dict)) or value is None:
        return json.dumps(value, separators=(",", ":"))
    return str(value)


class Axis:
    """One swept key: `path` is a config key or `--option`, `name` its column,
    `form` (or None) the text its value becomes on the command line, "{}"
    standing for the value: the column keeps the number, the config gets the
    text ("uplink:{}" with 0.5 sets uplink:0.5)."""

    def __init__(self, path, name, values, form=None):
        self.path, self.name, self.values, self.form = path, name, values, form

    @property
    def option(self):
        return self.path[2:] if self.path.startswith("--") else None


class Sweep:
    """A checked spec: base command line, axes, explicit points, filters.
    `points()` gives the expanded points in their fixed order."""

    def __init__(self, spec, spec_path, npusim):
        self.where = spec_path
        self.base_dir = os.path.dirname(os.path.abspath(spec_path))
        self.npusim = npusim
        check_tree(spec_path, spec)
        for key in spec:
            if key not in SPEC_KEYS:
                self._bad(key, f"one of {', '.join(SPEC_KEYS)}", f"unknown key {key!r}")
        self.command = spec.get("command", "train")
        if self.command not in COMMANDS:
            self._bad("command", f"one of {', '.join(COMMANDS)}", json.dumps(self.command))
        self.keys = schema_keys(npusim)
        self.options = command_options(npusim, self.command)
        self.system = self._file(spec, "system", required=True)
        takes_workload = self.command in WORKLOAD_COMMANDS
        if not takes_workload and "workload" in spec:
            self._bad("workload", f"no workload for npusim {self.command}", "one")
        self.workload = self._file(spec, "workload", required=takes_workload)
        self.base_options = self._base_options(spec.get("options", {}))
        self.base_set = self._base_set(spec.get("set", {}))
        self.axes = self._axes(spec.get("axes", []))
        self.explicit = self._explicit(spec.get("points"))
        if not self.axes and self.explicit is None:
            self._bad("axes", "at least one axis or a points list", "neither")
        sizes = [len(g[0].values) for g in self.axes] + [len(self.explicit or [{}])]
        if math.prod(sizes) > MAX_POINTS:
            self._bad("axes", f"at most {MAX_POINTS} points before the filter",
                      f"{math.prod(sizes)} ({' x '.join(map(str, sizes))})")
        self.filters = self._filters(spec.get("filter", []))

    def _bad(self, path, expected, found):
        found = str(found)
        if len(found) > 200:
            found = found[:195] + " ..."
        raise SpecError(f"{self.where}: {path}: expected {expected}, found {found}")

    def _file(self, spec, key, required):
        """A config file named in the spec, relative to the spec's folder."""
        if key not in spec:
            if required:
                self._bad(key, f"a {key} config file", "nothing")
            return None
        value = spec[key]
        if not isinstance(value, str):
            self._bad(key, "a file name", json.dumps(value))
        path = os.path.normpath(os.path.join(self.base_dir, value))
        if not os.path.isfile(path):
            self._bad(key, "an existing file", json.dumps(value))
        return path

    def _check_path(self, where, path):
        """A config key the schema lists, or an option of the command."""
        if not isinstance(path, str) or not path:
            self._bad(where, "a config key or --option", json.dumps(path))
        if path.startswith("--"):
            opt = path[2:]
            if opt not in self.options or opt in RESERVED_OPTIONS:
                usable = sorted(self.options - set(RESERVED_OPTIONS))
                self._bad(where, f"an option of npusim {self.command} ({', '.join(usable)})",
                          json.dumps(path))
            return
        kinds = ["system"] + (["workload"] if self.command in WORKLOAD_COMMANDS else [])
        if any(path in self.keys[k] for k in kinds):
            return
        known = sorted(set().union(*(self.keys[k] for k in kinds)))
        near = difflib.get_close_matches(path, known, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        self._bad(where, f"a config key of npusim schema or an --option of npusim {self.command}",
                  f"{json.dumps(path)}{hint}")

    def _base_options(self, options):
        if not isinstance(options, dict):
            self._bad("options", "an object of option: value", json.dumps(options))
        out = {}
        for opt, value in options.items():
            self._check_path(f"options.{opt}", "--" + opt)
            out[opt] = self._option_value(opt, value)
        return out

    def _option_value(self, opt, value):
        """File options resolve against the spec's folder; flags are true/false;
        a job option is FILE[@PLACEMENT] or an array of them (FILE resolved)."""
        if opt in FILE_OPTIONS and isinstance(value, str):
            return os.path.normpath(os.path.join(self.base_dir, value))
        if opt in JOB_OPTIONS:
            jobs = value if isinstance(value, list) else [value]
            if not jobs or not all(isinstance(j, str) and j and not j.startswith("@")
                                   for j in jobs):
                self._bad(f"--{opt}", "FILE[@PLACEMENT] or a non-empty array of them",
                          json.dumps(value))
            out = []
            for j in jobs:
                file, at, placement = j.partition("@")
                out.append(os.path.normpath(os.path.join(self.base_dir, file)) + at + placement)
            return out
        return value

    def _base_set(self, sets):
        if not isinstance(sets, dict):
            self._bad("set", "an object of config key: value", json.dumps(sets))
        for path in sets:
            self._check_path(f"set.{path}", path)
        return dict(sets)

    def _axis(self, where, entry):
        if not isinstance(entry, dict):
            self._bad(where, "an object with path and values", json.dumps(entry))
        for key in entry:
            if key not in ("path", "values", "name", "range", "format"):
                self._bad(f"{where}.{key}", "one of path, values, range, name, format",
                          f"unknown key {key!r}")
        self._check_path(f"{where}.path", entry.get("path"))
        values = entry.get("values")
        if "range" in entry:
            values = self._range(f"{where}.range", entry["range"])
        if not isinstance(values, list) or not values:
            self._bad(f"{where}.values", "a non-empty array", json.dumps(values))
        path = entry["path"]
        opt = path[2:] if path.startswith("--") else None
        form = entry.get("format")
        if opt and form is None:  # a formatted value is resolved once whole (command_line)
            values = [self._option_value(opt, v) for v in values]
        name = entry.get("name", opt or path)
        if not isinstance(name, str) or not name:
            self._bad(f"{where}.name", "a column name", json.dumps(name))
        if form is not None and (not isinstance(form, str) or "{}" not in form or
                                 form.count("{") != 1 or form.count("}") != 1):
            self._bad(f"{where}.format", 'a text with one {} for the value ("uplink:{}")',
                      json.dumps(form))
        return Axis(path, name, values, form)

    def _range(self, where, r):
        """[start, stop, step], stop included: a short way to write many
        values, at most MAX_POINTS of them (counted before any is made)."""
        if (not isinstance(r, list) or len(r) != 3 or
                not all(isinstance(x, (int, float)) and not isinstance(x, bool) and
                        math.isfinite(x) for x in r) or
                r[2] <= 0 or r[1] < r[0]):
            self._bad(where, "[start, stop, step] of finite numbers with start <= stop and "
                      "step > 0", json.dumps(r))
        if all(isinstance(x, int) for x in r):
            n = (r[1] - r[0]) // r[2] + 1
        else:
            q = (r[1] - r[0]) / r[2]
            n = math.floor(q + 1e-9) + 1 if q < 1e18 else math.inf
        if n > MAX_POINTS:
            found = f"{n}" if n != math.inf else "more than 1e18"
            self._bad(where, f"at most {MAX_POINTS} values", f"{found} ({json.dumps(r)})")
        if all(isinstance(x, int) for x in r):
            return [r[0] + i * r[2] for i in range(n)]
        return [round(r[0] + i * r[2], 12) for i in range(n)]  # no 0.30000000000000004

    def _axes(self, axes):
        """A list of groups; each group is one axis or a zip of axes that
        vary together. The grid is the product of the groups."""
        if not isinstance(axes, list):
            self._bad("axes", "an array of axes", json.dumps(axes))
        groups, names = [], set()
        for i, entry in enumerate(axes):
            if isinstance(entry, dict) and "zip" in entry:
                zipped = entry["zip"]
                if not isinstance(zipped, list) or not zipped or len(entry) != 1:
                    self._bad(f"axes[{i}].zip", "a non-empty array of axes", json.dumps(zipped))
                group = [self._axis(f"axes[{i}].zip[{j}]", a) for j, a in enumerate(zipped)]
                lengths = {len(a.values) for a in group}
                if len(lengths) != 1:
                    self._bad(f"axes[{i}].zip", "axes of equal length", sorted(lengths))
            else:
                group = [self._axis(f"axes[{i}]", entry)]
            for a in group:
                if a.name in names:
                    self._bad(f"axes[{i}]", "a distinct name per axis", f"{a.name!r} twice")
                names.add(a.name)
            groups.append(group)
        return groups

    def _explicit(self, points):
        """Explicit points: objects of key: value, crossed with the grid."""
        if points is None:
            return None
        if not isinstance(points, list) or not points:
            self._bad("points", "a non-empty array of objects", json.dumps(points))
        formatted = {a.path for group in self.axes for a in group if a.form}
        for i, p in enumerate(points):
            if not isinstance(p, dict) or not p:
                self._bad(f"points[{i}]", "an object of key: value", json.dumps(p))
            for path in p:
                self._check_path(f"points[{i}].{path}", path)
                if path in formatted:
                    self._bad(f"points[{i}].{path}", "no key an axis with a format sweeps",
                              json.dumps(path))
        return [{k: self._option_value(k[2:], v) if k.startswith("--") else v
                 for k, v in p.items()} for p in points]

    def _filters(self, filters):
        if isinstance(filters, str):
            filters = [filters]
        if not isinstance(filters, list):
            self._bad("filter", "an expression or an array of them", json.dumps(filters))
        out = []
        names = self.column_names()
        for i, text in enumerate(filters):
            try:
                paths = {a.path: a.name for group in self.axes for a in group}
                out.append(Filter(text, names, set(self.base_set), paths,
                                  where=f"{self.where}: filter[{i}]"))
            except SpecError as e:
                self._bad(f"filter[{i}]", "an expression over axis names", str(e))
        return out

    def column_names(self):
        """Axis names in column order; explicit points add their keys after."""
        names = [a.name for g in self.axes for a in g]
        for p in self.explicit or []:
            for k in p:
                name = k[2:] if k.startswith("--") else k
                if name not in names:
                    names.append(name)
        return names

    # ---- expansion ----

    def points(self):
        """Every point as an ordered list of (path, name, value), filtered.
        Order: explicit points outermost, then the axes as listed, the last
        varying fastest (like nested loops)."""
        groups = [[[(a.path, a.name, a.values[i]) for a in group]
                   for i in range(len(group[0].values))] for group in self.axes]
        explicit = [[(k, k[2:] if k.startswith("--") else k, v) for k, v in p.items()]
                    for p in self.explicit or [{}]]
        out = []
        for e in explicit:  # the grid is walked, never held: only kept points are
            own = {k for k, _, _ in e}
            for combo in itertools.product(*groups):
                point = e + [x for choice in combo for x in choice if x[0] not in own]
                env = dict(self.base_set)
                env.update({path: v for path, _, v in point})
                env.update({name: v for _, name, v in point})
                if all(f.holds(env, point) for f in self.filters):
                    out.append(point)
        return out

    def command_line(self, point):
        """npusim's argument list for one point; --format json always."""
        options = dict(self.base_options)
        sets = dict(self.base_set)
        forms = {a.path: a.form for group in self.axes for a in group if a.form}
        for path, _, value in point:
            opt = path[2:] if path.startswith("--") else None
            if path in forms:
                value = forms[path].replace("{}", fmt(value))
                if opt:
                    value = self._option_value(opt, value)
            if opt in JOB_OPTIONS:  # jobs add to the options' jobs: --job A --job B
                options[opt] = list(options.get(opt, [])) + value
            elif opt:
                options[opt] = value
            else:
                sets[path] = value
        args = [self.npusim, self.command, "--system", self.system]
        if self.workload:
            args += ["--workload", self.workload]
        for opt, value in options.items():
            if value is True:
                args.append("--" + opt)
            elif isinstance(value, list):  # a repeated option: --job A --job B
                for v in value:
                    args += ["--" + opt, fmt(v)]
            elif value is not False:
                args += ["--" + opt, fmt(value)]
        for path, value in sets.items():
            args += ["--set", f"{path}={fmt(value)}"]
        return args + ["--format", "json"], options, sets


class FilterError(Exception):
    """A filter that has no value at a point: (what was expected, what was found)."""

    def __init__(self, expected, found):
        super().__init__(found)
        self.expected, self.found = expected, found


def _int_ok(v):
    if isinstance(v, int) and not isinstance(v, bool) and not INT_MIN <= v <= INT_MAX:
        raise FilterError("integers within 64 bits", f"{v}" if abs(v) < 10 ** 40 else
                          f"an integer of {v.bit_length()} bits")
    return v


def shorten(text, limit=80):
    """repr(text), cut to about `limit` characters for an error line."""
    r = repr(text)
    return r if len(r) <= limit else r[:limit - 5] + "...'"


def _number(v, op):
    if isinstance(v, (int, float)):  # bool is an int: true + true == 2
        return _int_ok(v)
    raise FilterError(f"numbers for {op}", f"{type(v).__name__} {shorten(fmt(v))[1:-1]}")


def _pow(a, b):
    """a ** b without ever computing a huge integer: refused when the
    result would pass 64 bits, decided from the operands' sizes first."""
    if (isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1 and
            (abs(a).bit_length() - 1) * b >= 63):
        raise FilterError("integers within 64 bits", f"{a} ** {b}")
    r = a ** b
    if isinstance(r, complex):
        raise FilterError("a real number", f"{a} ** {b}")
    return r


class Filter:
    """A boolean expression over axis values, e.g. `tp*pp*dp == 256` or
    `parallel.tp <= 8 and parallel.pp in [1, 2, 4]`. Parsed once with `ast`
    and evaluated by walking its tree, which may hold only: names (axes,
    dotted paths, set keys, true/false), number, string and None constants,
    lists, + - * / // % ** on numbers, comparisons (in, not in), and/or/not.
    Integers stay within 64 bits (`**` is checked before it computes), the
    text within MAX_FILTER_CHARS and the tree within MAX_FILTER_DEPTH: a
    filter cannot run code, hang or exhaust memory."""

    BINOPS = {ast.Add: ("+", lambda a, b: a + b), ast.Sub: ("-", lambda a, b: a - b),
              ast.Mult: ("*", lambda a, b: a * b), ast.Div: ("/", lambda a, b: a / b),
              ast.FloorDiv: ("//", lambda a, b: a // b), ast.Mod: ("%", lambda a, b: a % b),
              ast.Pow: ("**", _pow)}
    CMPOPS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
              ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
              ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
              ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
    NODES = (ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant, ast.List,
             ast.Tuple, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, ast.Load)

    def __init__(self, text, names, base_keys, paths=None, where=None):
        if not isinstance(text, str):
            raise SpecError(json.dumps(text))
        self.shown = shorten(text)
        if len(text) > MAX_FILTER_CHARS:
            raise SpecError(f"{self.shown} of {len(text)} characters (at most {MAX_FILTER_CHARS})")
        try:
            self.tree = ast.parse(text.strip(), mode="eval").body
        except (SyntaxError, ValueError):
            raise SpecError(f"{self.shown} (not an expression)")
        except (RecursionError, MemoryError):
            raise SpecError(f"{self.shown} (nested more than {MAX_FILTER_DEPTH} deep)")
        self.text = text
        self.where = where
        # a name is an axis name, a base --set key, or the last part of one
        # (tp for parallel.tp) when that part is unique
        full = list(names) + sorted(base_keys)
        self.alias = {n: n for n in full}
        short = {}
        for n in full:
            short.setdefault(n.rsplit(".", 1)[-1], set()).add(n)
        for s, targets in short.items():
            if s not in self.alias and len(targets) == 1:
                self.alias[s] = targets.pop()
        for path, name in (paths or {}).items():  # an axis is also known by its path
            self.alias.setdefault(path.lstrip("-"), name)
        self._check(self.tree, 0)

    def _dotted(self, node, depth=0):
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute) and depth < MAX_FILTER_DEPTH:
            inner = self._dotted(node.value, depth + 1)
            return inner and inner + "." + node.attr
        return None

    def _check(self, node, depth):
        """Refuses anything but the allowed node kinds, unknown names,
        constants other than numbers, text and None, integers past 64 bits
        and trees nested deeper than MAX_FILTER_DEPTH."""
        if depth > MAX_FILTER_DEPTH:
            raise SpecError(f"{self.shown}: nested more than {MAX_FILTER_DEPTH} deep")
        name = self._dotted(node)
        if name is not None:
            if name not in self.alias and name not in ("true", "false", "True", "False"):
                raise SpecError(f"{self.shown}: unknown name {shorten(name)}")
            return
        if not isinstance(node, self.NODES + tuple(self.BINOPS) + tuple(self.CMPOPS)):
            raise SpecError(f"{self.shown}: {type(node).__name__} is not allowed")
        if isinstance(node, ast.Constant):
            v = node.value
            if not (v is None or isinstance(v, (int, float, str))):
                raise SpecError(f"{self.shown}: {type(v).__name__} constants are not allowed")
            if isinstance(v, int) and not INT_MIN <= v <= INT_MAX:
                raise SpecError(f"{self.shown}: {v} is beyond 64-bit integers")
        for child in ast.iter_child_nodes(node):
            self._check(child, depth + 1)

    def holds(self, env, point=()):
        try:
            return bool(self._eval(self.tree, env))
        except FilterError as e:
            expected, found = e.expected, e.found
        except OverflowError:
            expected, found = "numbers within range", "an overflow"
        except (ArithmeticError, TypeError, ValueError) as e:
            expected, found = "a value at every point", str(e)
        where = " ".join(f"{name}={fmt(v)}" for _, name, v in point)
        prefix = f"{self.where}: " if self.where else ""
        raise SpecError(f"{prefix}{self.shown}: expected {expected}, found {found} at [{where}]")

    def _eval(self, node, env):
        name = self._dotted(node)
        if name is not None:
            if name in ("true", "True"):
                return True
            if name in ("false", "False"):
                return False
            return env.get(self.alias[name])
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self._eval(e, env) for e in node.elts]
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand, env)
            if isinstance(node.op, ast.Not):
                return not v
            v = _number(v, "unary " + ("-" if isinstance(node.op, ast.USub) else "+"))
            return _int_ok(-v if isinstance(node.op, ast.USub) else +v)
        if isinstance(node, ast.BinOp):
            sym, op = self.BINOPS[type(node.op)]
            a = _number(self._eval(node.left, env), sym)
            b = _number(self._eval(node.right, env), sym)
            return _int_ok(op(a, b))
        if isinstance(node, ast.BoolOp):
            vals = (self._eval(v, env) for v in node.values)
            return all(vals) if isinstance(node.op, ast.And) else any(vals)
        left = self._eval(node.left, env)  # ast.Compare, chained as Python does
        for op, right_node in zip(node.ops, node.comparators):
            right = self._eval(right_node, env)
            if not self.CMPOPS[type(op)](left, right):
                return False
            left = right
        return True


# ---- running points -----------------------------------------------------------

def last_line(text, fallback):
    """The error line: npusim prints one; anything else, its last line."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else fallback


def file_digest(path):
    """sha256 of a regular file's bytes; None for anything else."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def resolve(sweep, point, timeout=DEFAULT_TIMEOUT_S):
    """(key, error, status): the key hashes the resolved config (`npusim
    validate --format json`: defaults filled, extends and --set applied), the
    command and its options (files by content), so a point is recognised
    whatever spelling reached it. A config npusim rejects gives its error
    line and status "failed" (a validate past the time limit: "timeout");
    the point is then keyed by what the spec said."""
    args, options, sets = sweep.command_line(point)
    check = [sweep.npusim, "validate", "--system", sweep.system]
    if sweep.workload:
        check += ["--workload", sweep.workload]
    for path, value in sets.items():
        check += ["--set", f"{path}={fmt(value)}"]
    limit = min(timeout or HELPER_TIMEOUT_S, HELPER_TIMEOUT_S)
    r = CHILDREN.run(check + ["--format", "json"], limit)
    opts = {k: (file_digest(v) if k in FILE_OPTIONS else
                [(file_digest(j.partition("@")[0]), j.partition("@")[2]) for j in v]
                if k in JOB_OPTIONS else v) for k, v in options.items()}
    config, error, status = None, None, None
    if r.returncode == 0 and not r.timed_out:
        try:
            config = json.loads(r.stdout.decode("utf-8", "replace"))  # the key only hashes it
        except ValueError:
            error, status = "npusim validate printed no JSON", "failed"
    elif r.timed_out:
        error, status = f"npusim validate timed out after {limit:g} s", "timeout"
    else:
        error, status = last_line(r.stderr, f"npusim validate exited {r.returncode}"), "failed"
    if config is not None:
        what = {"command": sweep.command, "options": opts, "config": config}
    else:
        what = {"command": sweep.command, "options": opts, "system": file_digest(sweep.system),
                "workload": sweep.workload and file_digest(sweep.workload), "set": sets}
    text = json.dumps(what, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16], error, status


def write_atomic(path, text):
    """Writes through a temporary file and a rename: never half a file, and
    no temporary file left when the write fails."""
    tmp = f"{path}.tmp{os.getpid()}.{threading.get_ident()}"
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def prepare_out(option, path):
    """Creates the output folder PATH/points and proves it writable;
    SpecError (one line, before anything runs) when PATH is a file or
    cannot be written."""
    if os.path.lexists(path) and not os.path.isdir(path):
        try:
            kind = "a file" if stat.S_ISREG(os.stat(path).st_mode) else file_kind(os.stat(path).st_mode)
        except OSError:
            kind = "a broken link"
        raise SpecError(f"{option} {path}: expected a folder, found {kind}")
    try:
        points = os.path.join(path, "points")
        os.makedirs(points, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe.", dir=points)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise SpecError(f"{option} {path}: expected a folder it can write, found "
                        f"{e.strerror or e}")


def interrupted_by(returncode):
    """The signal that killed a child when that signal means "stop" (a
    Ctrl-C or kill that reached it directly), else None. A crash (SIGSEGV,
    SIGABRT) is a result, not an interruption."""
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    if returncode < 0 and -returncode in stops:
        return -returncode
    if returncode > 128 and returncode - 128 in stops:
        return returncode - 128
    return None


def run_point(sweep, point, key, error, points_dir, timeout=DEFAULT_TIMEOUT_S,
              status=None):
    """Runs one point (unless its config was already rejected) with a time
    limit and stores its record in points_dir/KEY.json: status ok, failed
    (npusim's error line) or timeout. An interrupted run is not stored (a
    rerun runs it). Returns the record."""
    args, _, _ = sweep.command_line(point)
    axes = {name: v for _, name, v in point}
    start = time.monotonic()
    result = None
    if error is None:
        r = CHILDREN.run(args, timeout)
        stopped = interrupted_by(r.returncode)
        if r.timed_out:
            error, status = f"timed out after {timeout:g} s (--timeout)", "timeout"
        elif r.returncode == 0:
            try:
                result = json.loads(r.stdout.decode("utf-8", "replace"),
                                    parse_constant=_no_constant)
            except ValueError:
                error = "npusim printed no valid JSON"
        elif CHILDREN.stopping or stopped:
            return {"key": key, "axes": axes, "status": "interrupted",
                    "error": f"npusim stopped by {signal_name(stopped or signal.SIGTERM)}",
                    "result": None}
        elif r.returncode < 0:
            error = f"npusim killed by {signal_name(-r.returncode)}"
        else:
            error = last_line(r.stderr, f"npusim exited {r.returncode}")
    record = {"key": key, "axes": axes,
              "status": "ok" if error is None else (status or "failed"), "error": error,
              "result": result, "seconds": round(time.monotonic() - start, 3),
              "command": [os.path.basename(a) if i == 0 else a for i, a in enumerate(args)]}
    if record["status"] == "timeout":
        record["timeout_s"] = timeout
    write_atomic(os.path.join(points_dir, key + ".json"), json.dumps(record, indent=1) + "\n")
    return record


_progress_open = False  # an in-place progress line on a terminal lacks its newline


def end_progress():
    global _progress_open
    if _progress_open:
        _progress_open = False
        sys.stderr.write("\n")


class Progress:
    """`sweep: 5/12 done, 1 failed, ETA 4s` on stderr (`, 1 timed out` when
    some did): rewritten in place on a terminal, a line every few seconds
    (and the last) in a log."""

    def __init__(self, total, label="sweep"):
        self.total, self.label = total, label
        self.done = self.failed = self.timed_out = 0
        self.start = time.monotonic()
        self.last_print = self.start
        self.tty = sys.stderr.isatty()
        self.lock = threading.Lock()

    def add(self, status):
        global _progress_open
        with self.lock:
            self.done += 1
            self.failed += status == "failed"
            self.timed_out += status == "timeout"
            now = time.monotonic()
            if self.done == self.total or self.tty or now - self.last_print >= 5:
                self.last_print = now
                rate = (now - self.start) / self.done
                eta = rate * (self.total - self.done)
                late = f", {self.timed_out} timed out" if self.timed_out else ""
                line = (f"{self.label}: {self.done}/{self.total} done, {self.failed} failed"
                        f"{late}, ETA {eta:.0f}s")
                end = "\n" if not self.tty or self.done == self.total else ""
                print(("\r" if self.tty else "") + line, end=end, file=sys.stderr, flush=True)
                _progress_open = end == ""


def reusable(record, timeout):
    """A stored record counts unless it timed out under a shorter limit
    than this run's (None: no limit)."""
    if record is None:
        return False
    if record.get("status") != "timeout":
        return True
    before = record.get("timeout_s")
    return timeout is not None and isinstance(before, (int, float)) and timeout <= before


def run_sweep(sweep, points, out_dir, jobs, label="sweep", timeout=DEFAULT_TIMEOUT_S):
    """Resolves every point, runs those without a stored record on `jobs`
    workers, each under `timeout` seconds (None: no limit), and returns
    (records in point order, number run). A record on disk is reused
    whatever its status (but a timeout under a shorter limit): rerunning a
    sweep runs nothing twice. Interrupted (a signal, an error), it kills the
    running children and starts no more before it re-raises."""
    points_dir = os.path.join(out_dir, "points")
    os.makedirs(points_dir, exist_ok=True)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
    try:
        keyed = list(pool.map(lambda p: resolve(sweep, p, timeout), points))
        records = [None] * len(points)
        todo = []
        for i, (key, error, status) in enumerate(keyed):
            stored = load_record(points_dir, key)
            if reusable(stored, timeout):
                records[i] = stored
            else:
                todo.append(i)
        print(f"{label}: {len(points)} points, {len(points) - len(todo)} already done, "
              f"{len(todo)} to run on {jobs} workers", file=sys.stderr)
        progress = Progress(len(todo), label)
        futures = {}
        for i in todo:
            key, error, status = keyed[i]
            futures[pool.submit(run_point, sweep, points[i], key, error, points_dir,
                                timeout, status)] = i
        for fut in concurrent.futures.as_completed(futures):
            records[futures[fut]] = fut.result()
            progress.add(records[futures[fut]]["status"])
    except BaseException:
        CHILDREN.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return records, len(todo)


def load_record(points_dir, key):
    path = os.path.join(points_dir, key + ".json")
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) and "status" in record else None


# ---- tables -------------------------------------------------------------------

def flatten(value, prefix="", out=None, numbered=()):
    """Nested objects as dotted columns: breakdown.compute. Arrays of
    scalars stay one JSON cell, and so do arrays of objects but those named
    in `numbered` (top-level keys), whose items become numbered columns:
    jobs.0.slowdown, jobs.1.slowdown."""
    out = {} if out is None else out
    if isinstance(value, dict):
        for k, v in value.items():
            if prefix == "" and k in numbered and isinstance(v, list):
                for i, item in enumerate(v):
                    flatten(item, f"{k}.{i}.", out)
                continue
            flatten(v, f"{prefix}{k}.", out)
    elif isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        out[prefix[:-1]] = json.dumps(value, separators=(",", ":"))
    else:
        out[prefix[:-1]] = value
    return out


def rows_of(index, record, names, axes):
    """Table rows of one point: one per result object (coll prints one per
    size), or one row with the failure."""
    base = {"point": index, "key": record["key"]}
    base.update({n: axes.get(n) for n in names})
    base.update({"status": record["status"], "error": record["error"] or ""})
    result = record.get("result")
    items = result if isinstance(result, list) else [result]
    command = record.get("command") or [None, None]
    numbered = NUMBERED_ARRAYS.get(command[1] if len(command) > 1 else None, ())
    rows = []
    for item in items:
        row = dict(base)
        if isinstance(item, dict):  # the axis value wins over an echo of it (coll's op)
            row.update({k: v for k, v in flatten(item, numbered=numbered).items()
                        if k not in row})
        rows.append(row)
    return rows


def csv_cell(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v) if not isinstance(v, (list, dict)) else json.dumps(v, separators=(",", ":"))


def write_tables(out_dir, records, names, points, missing_label="missing"):
    """results.csv, results.jsonl and failures.txt, in point order. Columns:
    point, key, the axes (as the spec names them now: a reused record keeps
    the names it was run with), status, error, then the output fields in the
    order they first appear. Returns (rows, failures)."""
    rows, failures = [], []
    for i, record in enumerate(records):
        if record is None:
            record = {"key": "", "status": missing_label, "error": "not run yet",
                      "result": None}
        axes = {name: v for _, name, v in points[i]}
        rows += rows_of(i, record, names, axes)
        if record["status"] != "ok":
            where = " ".join(f"{n}={fmt(v)}" for n, v in axes.items())
            failures.append(f"point {i} [{where}]: {record['error']}")
    columns = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for row in rows:
        w.writerow([csv_cell(row.get(c)) for c in columns])
    write_atomic(os.path.join(out_dir, "results.csv"), buf.getvalue())
    jsonl = "".join(json.dumps({c: row.get(c) for c in columns}, separators=(",", ":")) + "\n"
                    for row in rows)
    write_atomic(os.path.join(out_dir, "results.jsonl"), jsonl)
    write_atomic(os.path.join(out_dir, "failures.txt"), "".join(f + "\n" for f in failures))
    return rows, failures


def read_table(path):
    """Rows of a results.csv or results.jsonl, numbers as numbers."""
    text = utf8_text(path, read_regular(path, 1 << 30, "a results.csv or results.jsonl"))
    try:
        if path.endswith(".jsonl"):
            rows = [json.loads(line, parse_constant=_no_constant)
                    for line in text.splitlines() if line.strip()]
            if not all(isinstance(r, dict) for r in rows):
                raise ValueError("a line is not a JSON object")
            return rows
        # a cell may hold a whole nested list (train's "links"): the file's own size bounds it
        csv.field_size_limit(max(len(text), 1 << 17))
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except _NotFinite as e:
        raise SpecError(f"{path}: expected finite numbers (JSON has no NaN or Infinity), "
                        f"found {e.text}")
    except (ValueError, csv.Error, RecursionError) as e:
        raise SpecError(f"{path}: expected a results.csv or results.jsonl, found {one_line(e)}")
    for row in rows:
        for k, v in row.items():
            row[k] = number_or_text(v)
    return rows


def number_or_text(v):
    if v in ("true", "false"):
        return v == "true"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return v
    if not math.isfinite(f):   # "nan", "inf": npusim never writes them; not an amount
        return v
    return int(f) if f.is_integer() and "." not in v and "e" not in v.lower() else f


# Columns of a results table that say which row it is, not what it predicts.
IDENTITY_COLUMNS = ("point", "key", "status", "error")


def row_identity(row, names, seen):
    """A row's place, the same in two runs of one spec: its axis values and
    its ordinal among the rows of that point (coll prints one per size)."""
    axes = tuple(fmt(row.get(n)) if not isinstance(row.get(n), str) else row.get(n)
                 for n in names)
    n = seen.get(axes, 0)
    seen[axes] = n + 1
    return axes + (n,)


def compare_baseline(path, rows, names, threshold_pct):
    """Rows of results against a baseline results.csv / .jsonl of the same
    spec: (moved, unmatched), moved a list of (identity, column, old, new,
    change_pct or None) for every number whose relative change passes the
    threshold, or a text that differs; unmatched the rows one run lacks."""
    old_rows = read_table(path)
    old, seen = {}, {}
    for r in old_rows:
        old[row_identity(r, names, seen)] = r
    moved, unmatched, seen = [], 0, {}
    for r in rows:
        ident = row_identity({n: number_or_text(csv_cell(r.get(n))) for n in names}, names, seen)
        base = old.pop(ident, None)
        if base is None:
            unmatched += 1
            continue
        for col, v in r.items():
            if col in IDENTITY_COLUMNS or col in names:
                continue
            new = number_or_text(csv_cell(v))
            was = base.get(col)
            if isinstance(new, (int, float)) and isinstance(was, (int, float)) and \
                    not isinstance(new, bool) and not isinstance(was, bool):
                if new == was:
                    continue
                change = 100.0 * (new - was) / abs(was) if was else None
                if change is not None and abs(change) <= threshold_pct:
                    continue
                moved.append((ident, col, was, new, change))
            elif csv_cell(new) != csv_cell(was) and not (col in ("links",) and was is None):
                moved.append((ident, col, was, new, None))
    return moved, unmatched + len(old)


def write_moved(out_dir, moved, names):
    """DIR/moved.csv: one row per figure that moved against the baseline."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(list(names) + ["row", "column", "baseline", "now", "change_pct"])
    for ident, col, was, new, change in moved:
        w.writerow([csv_cell(x) for x in ident[:-1]] + [ident[-1], col, csv_cell(was),
                                                          csv_cell(new),
                                                          "" if change is None else
                                                          "%.6g" % change])
    write_atomic(os.path.join(out_dir, "moved.csv"), buf.getvalue())
