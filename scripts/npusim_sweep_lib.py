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

Standard library only. Errors in the spec raise SpecError with one line; the
scripts print it and exit 2.
"""

import ast
import concurrent.futures
import csv
import difflib
import hashlib
import io
import itertools
import json
import os
import shutil
import subprocess
import sys
import threading
import time

COMMANDS = ("train", "coll", "op", "replay")
SPEC_KEYS = ("description", "command", "system", "workload", "options", "set", "axes",
             "points", "filter")
# options the runner sets itself; an axis or the spec must not change them
RESERVED_OPTIONS = ("format", "output", "set", "help", "system", "workload", "chrome-trace")
# options whose value is a file: relative to the spec, and hashed by content
FILE_OPTIONS = ("trace", "matrix")


class SpecError(Exception):
    """Bad input: the message is the one line the user sees."""


def fail(msg):
    """Prints one line and exits 2: bad input, nothing ran."""
    print(msg, file=sys.stderr)
    sys.exit(2)


# ---- npusim ---------------------------------------------------------------

def find_npusim():
    """$NPUSIM, else `npusim` on PATH, else this checkout's build/npusim."""
    env = os.environ.get("NPUSIM")
    if env:
        if not os.access(env, os.X_OK):
            raise SpecError(f"$NPUSIM: expected an executable npusim, found {env!r}")
        return os.path.abspath(env)
    found = shutil.which("npusim")
    if found:
        return found
    local = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "npusim")
    if os.access(local, os.X_OK):
        return os.path.normpath(local)
    raise SpecError("npusim: expected npusim on PATH or in $NPUSIM, found neither")


def npusim_text(npusim, *args):
    """What npusim prints for args; SpecError (one line) if it fails."""
    r = subprocess.run([npusim, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SpecError(f"{npusim} {' '.join(args)}: expected it to run, found exit "
                        f"{r.returncode}: {last_line(r.stderr, 'no message')}")
    return r.stdout


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

def load_spec(path):
    """The spec file as a dict; SpecError if it is not a JSON object."""
    try:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        raise SpecError(f"{path}:{e.lineno}:{e.colno}: expected a JSON sweep spec, "
                       f"found a syntax error ({e.msg})")
    if not isinstance(spec, dict):
        raise SpecError(f"{path}: expected a JSON object, found {type(spec).__name__}")
    return spec


def fmt(value):
    """A value as npusim's --set and the CSV write it: JSON for bools and
    lists, plain text otherwise."""
    if isinstance(value, (bool, list, dict)) or value is None:
        return json.dumps(value, separators=(",", ":"))
    return str(value)


class Axis:
    """One swept key: `path` is a config key or `--option`, `name` its column."""

    def __init__(self, path, name, values):
        self.path, self.name, self.values = path, name, values

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
        for key in spec:
            if key not in SPEC_KEYS:
                self._bad(key, f"one of {', '.join(SPEC_KEYS)}", f"unknown key {key!r}")
        self.command = spec.get("command", "train")
        if self.command not in COMMANDS:
            self._bad("command", f"one of {', '.join(COMMANDS)}", json.dumps(self.command))
        self.keys = schema_keys(npusim)
        self.options = command_options(npusim, self.command)
        self.system = self._file(spec, "system", required=True)
        if self.command != "train" and "workload" in spec:
            self._bad("workload", f"no workload for npusim {self.command}", "one")
        self.workload = self._file(spec, "workload", required=self.command == "train")
        self.base_options = self._base_options(spec.get("options", {}))
        self.base_set = self._base_set(spec.get("set", {}))
        self.axes = self._axes(spec.get("axes", []))
        self.explicit = self._explicit(spec.get("points"))
        self.filters = self._filters(spec.get("filter", []))
        if not self.axes and self.explicit is None:
            self._bad("axes", "at least one axis or a points list", "neither")

    def _bad(self, path, expected, found):
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
        kinds = ["system"] + (["workload"] if self.command == "train" else [])
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
        """File options resolve against the spec's folder; flags are true/false."""
        if opt in FILE_OPTIONS and isinstance(value, str):
            return os.path.normpath(os.path.join(self.base_dir, value))
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
            if key not in ("path", "values", "name", "range"):
                self._bad(f"{where}.{key}", "one of path, values, range, name", f"unknown key {key!r}")
        self._check_path(f"{where}.path", entry.get("path"))
        values = entry.get("values")
        if "range" in entry:
            values = self._range(f"{where}.range", entry["range"])
        if not isinstance(values, list) or not values:
            self._bad(f"{where}.values", "a non-empty array", json.dumps(values))
        path = entry["path"]
        opt = path[2:] if path.startswith("--") else None
        values = [self._option_value(opt, v) for v in values] if opt else values
        name = entry.get("name", opt or path)
        if not isinstance(name, str) or not name:
            self._bad(f"{where}.name", "a column name", json.dumps(name))
        return Axis(path, name, values)

    def _range(self, where, r):
        """[start, stop, step], stop included: a short way to write many values."""
        if (not isinstance(r, list) or len(r) != 3 or
                not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in r) or
                r[2] <= 0 or r[1] < r[0]):
            self._bad(where, "[start, stop, step] with start <= stop and step > 0",
                      json.dumps(r))
        n = int((r[1] - r[0]) / r[2] + 1e-9) + 1
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
        for i, p in enumerate(points):
            if not isinstance(p, dict) or not p:
                self._bad(f"points[{i}]", "an object of key: value", json.dumps(p))
            for path in p:
                self._check_path(f"points[{i}].{path}", path)
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
                out.append(Filter(text, names, set(self.base_set), paths))
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
        grid = [[]]
        for group in self.axes:
            choices = [[(a.path, a.name, a.values[i]) for a in group]
                       for i in range(len(group[0].values))]
            grid = [g + c for g in grid for c in choices]
        explicit = [[(k, k[2:] if k.startswith("--") else k, v) for k, v in p.items()]
                    for p in self.explicit or [{}]]
        out = []
        for e, g in itertools.product(explicit, grid):
            point = e + [x for x in g if x[0] not in {k for k, _, _ in e}]
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
        for path, _, value in point:
            if path.startswith("--"):
                options[path[2:]] = value
            else:
                sets[path] = value
        args = [self.npusim, self.command, "--system", self.system]
        if self.workload:
            args += ["--workload", self.workload]
        for opt, value in options.items():
            if value is True:
                args.append("--" + opt)
            elif value is not False:
                args += ["--" + opt, fmt(value)]
        for path, value in sets.items():
            args += ["--set", f"{path}={fmt(value)}"]
        return args + ["--format", "json"], options, sets


class Filter:
    """A boolean expression over axis values, e.g. `tp*pp*dp == 256` or
    `parallel.tp <= 8 and parallel.pp in [1, 2, 4]`. Parsed once and
    evaluated by walking its tree: only arithmetic, comparisons, and/or/not
    and names are allowed, so a spec cannot run code."""

    BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
              ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
              ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
              ast.Pow: lambda a, b: a ** b}
    CMPOPS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
              ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
              ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
              ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}

    def __init__(self, text, names, base_keys, paths=None):
        if not isinstance(text, str):
            raise SpecError(json.dumps(text))
        try:
            self.tree = ast.parse(text, mode="eval").body
        except SyntaxError:
            raise SpecError(f"{text!r} (not an expression)")
        self.text = text
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
        self._check(self.tree)

    def _dotted(self, node):
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            inner = self._dotted(node.value)
            return inner and inner + "." + node.attr
        return None

    def _check(self, node):
        """Refuses anything but the allowed node kinds and unknown names."""
        name = self._dotted(node)
        if name is not None:
            if name not in self.alias and name not in ("true", "false", "True", "False"):
                raise SpecError(f"{self.text!r}: unknown name {name!r}")
            return
        allowed = (ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant, ast.List,
                   ast.Tuple, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, ast.Load,
                   *self.BINOPS, *self.CMPOPS)
        if not isinstance(node, allowed):
            raise SpecError(f"{self.text!r}: {type(node).__name__} is not allowed")
        for child in ast.iter_child_nodes(node):
            self._check(child)

    def holds(self, env, point=()):
        try:
            return bool(self._eval(self.tree, env))
        except (ArithmeticError, TypeError, ValueError) as e:
            where = " ".join(f"{name}={fmt(v)}" for _, name, v in point)
            raise SpecError(f"{self.text!r}: expected a value at every point, found {e} "
                            f"at [{where}]")

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
            return {ast.Not: lambda: not v, ast.USub: lambda: -v, ast.UAdd: lambda: +v}[
                type(node.op)]()
        if isinstance(node, ast.BinOp):
            return self.BINOPS[type(node.op)](self._eval(node.left, env),
                                              self._eval(node.right, env))
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
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def resolve(sweep, point):
    """(key, error): the key hashes the resolved config (`npusim validate
    --format json`: defaults filled, extends and --set applied), the command
    and its options (files by content), so a point is recognised whatever
    spelling reached it. A config npusim rejects gives its error line; the
    point is then keyed by what the spec said."""
    args, options, sets = sweep.command_line(point)
    check = [sweep.npusim, "validate", "--system", sweep.system]
    if sweep.workload:
        check += ["--workload", sweep.workload]
    for path, value in sets.items():
        check += ["--set", f"{path}={fmt(value)}"]
    r = subprocess.run(check + ["--format", "json"], capture_output=True, text=True)
    opts = {k: (file_digest(v) if k in FILE_OPTIONS else v) for k, v in options.items()}
    if r.returncode == 0:
        what = {"command": sweep.command, "options": opts, "config": json.loads(r.stdout)}
        error = None
    else:
        what = {"command": sweep.command, "options": opts, "system": file_digest(sweep.system),
                "workload": sweep.workload and file_digest(sweep.workload), "set": sets}
        error = last_line(r.stderr, f"npusim validate exited {r.returncode}")
    text = json.dumps(what, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16], error


def write_atomic(path, text):
    """Writes through a temporary file and a rename: never half a file."""
    tmp = f"{path}.tmp{os.getpid()}.{threading.get_ident()}"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def run_point(sweep, point, key, error, points_dir):
    """Runs one point (unless its config was already rejected) and stores
    its record in points_dir/KEY.json. Returns the record."""
    args, _, _ = sweep.command_line(point)
    start = time.monotonic()
    result = None
    if error is None:
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode == 0:
            try:
                result = json.loads(r.stdout)
            except json.JSONDecodeError:
                error = "npusim printed no JSON"
        elif r.returncode < 0:  # killed (an interrupted sweep): not a result, run it again
            return {"key": key, "axes": {name: v for _, name, v in point},
                    "status": "interrupted", "error": f"npusim killed by signal {-r.returncode}",
                    "result": None}
        else:
            error = last_line(r.stderr, f"npusim exited {r.returncode}")
    record = {"key": key, "axes": {name: v for _, name, v in point},
              "status": "ok" if error is None else "failed", "error": error,
              "result": result, "seconds": round(time.monotonic() - start, 3),
              "command": [os.path.basename(a) if i == 0 else a for i, a in enumerate(args)]}
    write_atomic(os.path.join(points_dir, key + ".json"), json.dumps(record, indent=1) + "\n")
    return record


class Progress:
    """`sweep: 5/12 done, 1 failed, ETA 4s` on stderr: rewritten in place on
    a terminal, a line every few seconds (and the last) in a log."""

    def __init__(self, total, label="sweep"):
        self.total, self.label = total, label
        self.done = self.failed = 0
        self.start = time.monotonic()
        self.last_print = self.start
        self.tty = sys.stderr.isatty()
        self.lock = threading.Lock()

    def add(self, failed):
        with self.lock:
            self.done += 1
            self.failed += failed
            now = time.monotonic()
            if self.done == self.total or self.tty or now - self.last_print >= 5:
                self.last_print = now
                rate = (now - self.start) / self.done
                eta = rate * (self.total - self.done)
                line = (f"{self.label}: {self.done}/{self.total} done, {self.failed} failed, "
                        f"ETA {eta:.0f}s")
                end = "\n" if not self.tty or self.done == self.total else ""
                print(("\r" if self.tty else "") + line, end=end, file=sys.stderr, flush=True)


def run_sweep(sweep, points, out_dir, jobs, label="sweep"):
    """Resolves every point, runs those without a stored record on `jobs`
    workers and returns (records in point order, number run). A record on
    disk is reused whatever its status: rerunning a sweep runs nothing twice."""
    points_dir = os.path.join(out_dir, "points")
    os.makedirs(points_dir, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        keyed = list(pool.map(lambda p: resolve(sweep, p), points))
        records = [None] * len(points)
        todo = []
        for i, (key, error) in enumerate(keyed):
            stored = load_record(points_dir, key)
            if stored is not None:
                records[i] = stored
            else:
                todo.append(i)
        print(f"{label}: {len(points)} points, {len(points) - len(todo)} already done, "
              f"{len(todo)} to run on {jobs} workers", file=sys.stderr)
        progress = Progress(len(todo), label)
        futures = {}
        try:
            for i in todo:
                key, error = keyed[i]
                futures[pool.submit(run_point, sweep, points[i], key, error, points_dir)] = i
            for fut in concurrent.futures.as_completed(futures):
                records[futures[fut]] = fut.result()
                progress.add(records[futures[fut]]["status"] != "ok")
        except KeyboardInterrupt:
            for fut in futures:
                fut.cancel()
            raise
    return records, len(todo)


def load_record(points_dir, key):
    path = os.path.join(points_dir, key + ".json")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return None


# ---- tables -------------------------------------------------------------------

def flatten(value, prefix="", out=None):
    """Nested objects as dotted columns: breakdown.compute. Arrays of
    scalars stay one JSON cell."""
    out = {} if out is None else out
    if isinstance(value, dict):
        for k, v in value.items():
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
    rows = []
    for item in items:
        row = dict(base)
        if isinstance(item, dict):  # the axis value wins over an echo of it (coll's op)
            row.update({k: v for k, v in flatten(item).items() if k not in row})
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
    try:
        with open(path, encoding="utf-8") as f:
            if path.endswith(".jsonl"):
                return [json.loads(line) for line in f if line.strip()]
            rows = list(csv.DictReader(f))
    except (OSError, json.JSONDecodeError, csv.Error) as e:
        raise SpecError(f"{path}: expected a results.csv or results.jsonl, {e}")
    for row in rows:
        for k, v in row.items():
            row[k] = number_or_text(v)
    return rows


def number_or_text(v):
    if v in ("true", "false"):
        return v == "true"
    try:
        f = float(v)
        return int(f) if f.is_integer() and "." not in v and "e" not in v.lower() else f
    except (TypeError, ValueError):
        return v
