"""test_sweep_lib.py - unit tests of scripts/lib/npusim_sweep_lib.py: axis
expansion (grid, zip, explicit points, ranges), filters (names, short names,
dotted paths, refused code, bounded integers), spec errors and limits,
flattening and CSV cells; on a fake npusim that sleeps, per-point time
limits and interrupted sweeps (children killed, one line, 128 + signal); and
npusim-plot's figures (axis labels with units, legend outside the data area,
titles from the spec), drawn by a python with matplotlib.

  NPUSIM=build/npusim python3 -m unittest tests/unit/scripts/test_sweep_lib.py
(npusim is needed for its schema, --help and validate; nothing is simulated.)
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))
import npusim_sweep_lib as lib  # noqa: E402

NPUSIM = lib.find_npusim()
SYSTEM = os.path.join(ROOT, "configs/systems/ascend-910b.json")
TINY = os.path.join(ROOT, "tests/data/train/tiny.json")


def sweep(**spec):
    spec.setdefault("system", SYSTEM)
    spec.setdefault("workload", TINY)
    spec = {k: v for k, v in spec.items() if v is not None}
    return lib.Sweep(spec, os.path.join(ROOT, "spec.json"), NPUSIM)


def values(s):
    return [tuple(v for _, _, v in p) for p in s.points()]


class Expansion(unittest.TestCase):
    def test_grid_is_the_product_with_the_last_axis_fastest(self):
        s = sweep(axes=[{"path": "parallel.tp", "values": [1, 2]},
                        {"path": "parallel.pp", "values": [1, 2, 4]}])
        self.assertEqual(values(s), [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 4)])

    def test_zip_varies_its_axes_together(self):
        s = sweep(axes=[{"zip": [{"path": "parallel.tp", "values": [1, 2]},
                                 {"path": "parallel.dp", "values": [8, 4]}]},
                        {"path": "parallel.recompute", "values": ["none", "full"]}])
        self.assertEqual(values(s), [(1, 8, "none"), (1, 8, "full"), (2, 4, "none"),
                                     (2, 4, "full")])

    def test_explicit_points_are_crossed_with_the_grid(self):
        s = sweep(points=[{"parallel.tp": 2, "parallel.pp": 2}, {"parallel.tp": 4}],
                  axes=[{"path": "training.micro_batch", "values": [1, 2]}])
        self.assertEqual(values(s), [(2, 2, 1), (2, 2, 2), (4, 1), (4, 2)])
        self.assertEqual(s.column_names(), ["training.micro_batch", "parallel.tp", "parallel.pp"])

    def test_range_includes_its_stop(self):
        s = sweep(axes=[{"path": "node.scale_up.link_bandwidth_GBps", "range": [14, 56, 14]}])
        self.assertEqual(values(s), [(14,), (28,), (42,), (56,)])

    def test_float_range_is_rounded_and_a_reversed_range_refused(self):
        s = sweep(axes=[{"path": "chip.hbm.efficiency", "range": [0.1, 0.3, 0.1]}])
        self.assertEqual(values(s), [(0.1,), (0.2,), (0.3,)])
        with self.assertRaises(lib.SpecError):
            sweep(axes=[{"path": "parallel.tp", "range": [4, 1, 1]}])

    def test_a_named_axis_answers_to_its_path_in_filters(self):
        s = sweep(axes=[{"path": "parallel.tp", "name": "tp", "values": [1, 2, 4]}],
                  filter="parallel.tp >= 2")
        self.assertEqual(values(s), [(2,), (4,)])

    def test_a_filter_that_fails_at_a_point_is_a_spec_error(self):
        s = sweep(axes=[{"path": "parallel.pp", "values": [0, 1]}], filter="8 / pp == 8")
        with self.assertRaises(lib.SpecError) as e:
            s.points()
        self.assertIn("pp=0", str(e.exception))

    def test_option_axes_and_the_command_line(self):
        s = sweep(command="coll", workload=None,
                  options={"fidelity": "analytic", "links": True},
                  axes=[{"path": "--ranks", "values": [8, 16]}],
                  set={"chip.hbm.bandwidth_GBps": 3200})
        args, options, sets = s.command_line(s.points()[1])
        self.assertEqual(args[1], "coll")
        self.assertIn("--links", args)
        self.assertEqual(args[args.index("--ranks") + 1], "16")
        self.assertEqual(args[args.index("--set") + 1], "chip.hbm.bandwidth_GBps=3200")
        self.assertEqual(args[-2:], ["--format", "json"])

    def test_a_format_sets_text_and_keeps_the_number_in_the_column(self):
        s = sweep(axes=[{"path": "cluster.faults.links", "name": "uplink_left",
                         "format": "uplink:{}", "values": [1, 0.5]}],
                  filter="uplink_left < 1")
        point = s.points()
        self.assertEqual(values(s), [(0.5,)])
        args, _, sets = s.command_line(point[0])
        self.assertEqual(args[args.index("--set") + 1], "cluster.faults.links=uplink:0.5")


class ServeAndCluster(unittest.TestCase):
    def test_serve_takes_a_workload_and_its_keys(self):
        s = sweep(command="serve", workload=os.path.join(ROOT, "configs/workloads/serve-llama3-8b.json"),
                  axes=[{"path": "serving.requests.rate_per_s", "values": [5, 10]}])
        args, _, _ = s.command_line(s.points()[1])
        self.assertEqual(args[1], "serve")
        self.assertIn("--workload", args)
        self.assertIn("serving.requests.rate_per_s=10", args)

    def test_cluster_jobs_repeat_resolved_against_the_spec_and_add_to_the_options(self):
        s = sweep(command="cluster", workload=None,
                  options={"job": "configs/workloads/llama3-8b-dp4.json@packed"},
                  axes=[{"path": "--job", "name": "second", "values": ["packed", "spread"],
                         "format": "configs/workloads/llama3-8b.json@{}"}])
        args, _, _ = s.command_line(s.points()[1])
        jobs = [args[i + 1] for i, a in enumerate(args) if a == "--job"]
        self.assertEqual(jobs, [os.path.join(ROOT, "configs/workloads/llama3-8b-dp4.json@packed"),
                                os.path.join(ROOT, "configs/workloads/llama3-8b.json@spread")])
        self.assertEqual([v for _, _, v in s.points()[1]], ["spread"])

    def test_a_job_that_is_not_file_at_placement_is_refused(self):
        with self.assertRaisesRegex(lib.SpecError, r"--job: expected FILE\[@PLACEMENT\]"):
            sweep(command="cluster", workload=None, options={"job": ["@packed"]},
                  axes=[{"path": "cluster.nodes", "values": [8]}])

    def test_jobs_and_pools_become_numbered_columns(self):
        record = {"key": "k", "status": "ok", "error": None, "command": ["npusim", "cluster"],
                  "result": {"npus": 64, "jobs": [{"slowdown": 1.0}, {"slowdown": 1.5}],
                             "shared_links": [{"link": "a"}]}}
        row = lib.rows_of(0, record, [], {})[0]
        self.assertEqual((row["jobs.0.slowdown"], row["jobs.1.slowdown"]), (1.0, 1.5))
        self.assertEqual(row["shared_links"], '[{"link":"a"}]')
        record["command"] = ["npusim", "train"]  # other commands keep one JSON cell
        self.assertNotIn("jobs.0.slowdown", lib.rows_of(0, record, [], {})[0])


class Filters(unittest.TestCase):
    axes = [{"path": "parallel.tp", "name": "tp", "values": [1, 2, 4, 8]},
            {"path": "parallel.pp", "values": [1, 2, 4]},
            {"path": "parallel.dp", "values": [1, 2, 4, 8, 16, 32]}]

    def test_product_filter_keeps_exactly_the_products(self):
        s = sweep(axes=self.axes, filter="tp * pp * dp == 32")
        got = values(s)
        self.assertTrue(got)
        self.assertTrue(all(a * b * c == 32 for a, b, c in got))
        self.assertEqual(len(got), 4 * 3 - 0)  # every (tp, pp) has its dp in the list

    def test_dotted_paths_boolean_operators_and_membership(self):
        s = sweep(axes=self.axes, filter=["parallel.pp in [1, 4] and not tp > 2",
                                          "parallel.dp % 16 == 0 or dp == 1"])
        for tp, pp, dp in values(s):
            self.assertIn(pp, (1, 4))
            self.assertLessEqual(tp, 2)
            self.assertTrue(dp in (1, 16, 32))
        self.assertEqual(len(values(s)), 2 * 2 * 3)

    def test_base_set_values_are_names_too(self):
        s = sweep(axes=self.axes[:1], set={"training.global_batch": 16},
                  filter="global_batch % tp == 0 and tp < 16")
        self.assertEqual(values(s), [(1,), (2,), (4,), (8,)])

    def test_code_is_refused(self):
        for text in ("__import__('os').system('true')", "tp.__class__", "[x for x in tp]",
                     "tp if tp else pp"):
            with self.assertRaises(lib.SpecError, msg=text):
                sweep(axes=self.axes, filter=text)

    def test_unknown_and_ambiguous_names_are_refused(self):
        with self.assertRaisesRegex(lib.SpecError, "unknown name 'tpp'"):
            sweep(axes=self.axes, filter="tpp == 1")
        bw = [{"path": "node.scale_up.link_bandwidth_GBps", "values": [1]},
              {"path": "cluster.supernode.link_bandwidth_GBps", "values": [1]}]
        with self.assertRaisesRegex(lib.SpecError, "unknown name 'link_bandwidth_GBps'"):
            sweep(axes=bw, filter="link_bandwidth_GBps > 0")


class SpecErrors(unittest.TestCase):
    def assertSpecError(self, pattern, **spec):
        with self.assertRaisesRegex(lib.SpecError, pattern) as cm:
            sweep(**spec)
        self.assertNotIn("\n", str(cm.exception))

    def test_bad_specs_say_where_and_what(self):
        self.assertSpecError(r"axes\[0\]\.path: .*found \"model.hiden\" \(did you mean 'model.hidden'\?\)",
                             axes=[{"path": "model.hiden", "values": [1]}])
        self.assertSpecError(r"axes\[1\]\.values: expected a non-empty array, found \[\]",
                             axes=[{"path": "parallel.tp", "values": [1]},
                                   {"path": "parallel.pp", "values": []}])
        self.assertSpecError(r"axes\[0\]\.zip: expected axes of equal length",
                             axes=[{"zip": [{"path": "parallel.tp", "values": [1, 2]},
                                            {"path": "parallel.pp", "values": [1]}]}])
        self.assertSpecError(r"axes\[1\]: expected a distinct name", axes=[
            {"path": "parallel.tp", "values": [1]}, {"path": "parallel.tp", "values": [2]}])
        self.assertSpecError(r"spec.json: nope: expected one of", nope=1,
                             axes=[{"path": "parallel.tp", "values": [1]}])
        self.assertSpecError(r"axes: expected at least one axis or a points list")
        self.assertSpecError(r"--format", axes=[{"path": "--format", "values": ["csv"]}])
        self.assertSpecError(r"axes\[0\]\.format: expected a text with one \{\}",
                             axes=[{"path": "cluster.faults.links", "format": "uplink:",
                                    "values": [1]}])

    def test_workload_keys_need_the_train_command(self):
        with self.assertRaisesRegex(lib.SpecError, "an --option of npusim coll"):
            sweep(command="coll", workload=None, axes=[{"path": "parallel.tp", "values": [1]}])

    def test_not_json(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "not-json-spec.json")
            with open(path, "w") as f:
                f.write('{"axes": [1,,]}')
            with self.assertRaisesRegex(lib.SpecError, r"not-json-spec.json:1:\d+: expected a JSON"):
                lib.load_spec(path)


class Limits(unittest.TestCase):
    """F11: filters that would hang or run code, ranges that would exhaust
    memory, and values no JSON has are refused with one line, quickly."""

    axes = [{"path": "parallel.tp", "name": "tp", "values": [1, 2]}]

    def refused(self, pattern, **spec):
        start = time.monotonic()
        with self.assertRaisesRegex(lib.SpecError, pattern) as cm:
            sweep(**spec).points()
        self.assertLess(time.monotonic() - start, 5)
        self.assertNotIn("\n", str(cm.exception))
        return str(cm.exception)

    def test_a_huge_power_is_refused_before_it_is_computed(self):
        msg = self.refused("expected integers within 64 bits", axes=self.axes,
                           filter="9**9**9 == 1")
        self.assertEqual(msg, os.path.join(ROOT, "spec.json") + ": filter[0]: '9**9**9 == 1': "
                         "expected integers within 64 bits, found 9 ** 387420489 at [tp=1]")
        self.refused("found 2 \\*\\* 63", axes=self.axes, filter="2 ** 63 > 0")
        self.refused("found 9999999999800000000001", axes=self.axes,
                     filter="tp * 99999999999 * 99999999999 > 0")
        self.assertEqual(values(sweep(axes=self.axes, filter="2 ** 62 > tp ** 2")), [(1,), (2,)])

    def test_arithmetic_is_on_numbers_only(self):
        for text in ("'%999999999d' % 1 == 'a'", "'a' * 10 ** 9 == 'a'", "[1] * 10 ** 9 == [1]",
                     "-'a' == 1"):
            self.refused("expected numbers for", axes=self.axes, filter=text)

    def test_constants_size_and_depth_are_bounded(self):
        self.refused("bytes constants are not allowed", axes=self.axes, filter="b'x' == tp")
        self.refused("complex constants", axes=self.axes, filter="1j == tp")
        self.refused("beyond 64-bit integers", axes=self.axes, filter="tp < 99999999999999999999")
        self.refused("nested more than 64 deep", axes=self.axes, filter="-" * 3000 + "tp == 1")
        self.refused("nested more than 64 deep", axes=self.axes, filter="1+" * 1000 + "tp == 1")
        self.refused("characters \\(at most 4096\\)", axes=self.axes, filter="tp" + " " * 5000)
        self.refused("Call is not allowed", axes=self.axes, filter="abs(tp) == 1")
        self.refused("Attribute is not allowed", axes=self.axes, filter="(1).real == 1")

    def test_a_filter_that_fails_names_the_spec_the_filter_and_the_point(self):
        msg = self.refused("division", axes=[{"path": "parallel.pp", "values": [1, 0]}],
                           filter="8 // pp == 8")
        self.assertEqual(msg, os.path.join(ROOT, "spec.json") + ": filter[0]: '8 // pp == 8': "
                         "expected a value at every point, found integer division or modulo by "
                         "zero at [parallel.pp=0]")
        self.refused("found an overflow", axes=self.axes, filter="2.0 ** 100000 > tp")

    def test_a_range_is_counted_before_it_is_expanded(self):
        msg = self.refused("axes\\[0\\].range: expected at most 1000000 values",
                           axes=[{"path": "parallel.tp", "range": [1, 1e12, 1]}])
        self.assertTrue(msg.endswith("found 1000000000000 ([1, 1000000000000.0, 1])"), msg)
        self.refused("found more than 1e18", axes=[{"path": "chip.hbm.efficiency",
                                                    "range": [0, 1, 1e-300]}])
        self.refused("found 1000001 ", axes=[{"path": "parallel.tp",
                                              "range": [0, 1000000, 1]}])
        self.assertEqual(len(sweep(axes=[{"path": "parallel.tp",
                                          "range": [1, lib.MAX_POINTS, 1]}]).axes[0][0].values),
                         lib.MAX_POINTS)

    def test_the_grid_is_counted_before_it_is_expanded(self):
        big = [{"path": p, "range": [1, 1000, 1]} for p in
               ("parallel.tp", "parallel.pp", "parallel.dp")]
        self.refused(r"axes: expected at most 1000000 points before the filter, "
                     r"found 1000000000 \(1000 x 1000 x 1000 x 1\)", axes=big)

    def test_ranges_of_infinity_or_nan_are_refused(self):
        for bad in (float("inf"), float("nan")):
            msg = self.refused("expected a finite number",
                               axes=[{"path": "parallel.tp", "range": [1, bad, 1]}])
            self.assertTrue(msg.endswith(f": axes[0].range[1]: expected a finite number, "
                                         f"found {bad}"), msg)

    def test_load_spec_refuses_bad_utf8_deep_nesting_and_non_finite_numbers(self):
        cases = [(b'{"axes": "\xff"}', "s.json:1:11: expected UTF-8 text, found byte 0xff"),
                 (b"[" * 100000 + b"]" * 100000,
                  "s.json: expected a JSON sweep spec nested at most 32 deep, found deeper"),
                 (b'{"a": [1, Infinity, 1]}', "s.json: expected finite numbers (JSON has no NaN "
                                              "or Infinity), found Infinity"),
                 (b'{"a": NaN}', "s.json: expected finite numbers (JSON has no NaN or "
                                 "Infinity), found NaN"),
                 (b'{"a": 1e999}', "s.json: expected finite numbers (JSON has no NaN or "
                                   "Infinity), found 1e999"),
                 (b'{"a": 9223372036854775808}', "s.json: expected integers within 64 bits, "
                                                 "found 9223372036854775808")]
        with tempfile.TemporaryDirectory() as d:
            cwd = os.getcwd()
            os.chdir(d)
            try:
                for data, line in cases:
                    with open("s.json", "wb") as f:
                        f.write(data)
                    with self.assertRaises(lib.SpecError) as cm:
                        lib.load_spec("s.json")
                    self.assertEqual(str(cm.exception), line)
                os.mkfifo("fifo.json")
                with self.assertRaisesRegex(lib.SpecError, "found a FIFO"):
                    lib.load_spec("fifo.json")
            finally:
                os.chdir(cwd)

    def test_nesting_and_control_characters_in_a_spec_object(self):
        deep = 1
        for _ in range(40):
            deep = [deep]
        self.refused("expected a spec nested at most 32 deep",
                     axes=[{"path": "parallel.tp", "values": [deep]}])
        self.refused(r"axes\[0\]\.values\[0\]: expected text without control characters",
                     axes=[{"path": "parallel.recompute", "values": ["full\x00"]}])
        self.refused("expected valid Unicode text",
                     axes=[{"path": "parallel.recompute", "values": ["\ud800"]}])


SLOW_NPUSIM = textwrap.dedent("""\
    #!/bin/sh
    # npusim, but a run with --ranks 16 sleeps (in a child, as a wrapper might)
    case "$1" in validate|schema) exec "$REAL_NPUSIM" "$@";; esac
    case " $* " in *" --help "*) exec "$REAL_NPUSIM" "$@";; esac
    case " $* " in *" --ranks 16 "*)
      sleep 60 & echo "$$ $!" >>"$PIDS"; wait; exit 0;; esac
    exec "$REAL_NPUSIM" "$@"
    """)


class Children(unittest.TestCase):
    """Per-point time limits and interrupted sweeps, on a fake npusim whose
    --ranks 16 runs sleep for a minute."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.pids = os.path.join(self.dir, "pids")
        fake = os.path.join(self.dir, "npusim")
        with open(fake, "w") as f:
            f.write(SLOW_NPUSIM)
        os.chmod(fake, 0o755)
        self.env = dict(os.environ, NPUSIM=fake, REAL_NPUSIM=NPUSIM, PIDS=self.pids)
        spec = {"command": "coll", "system": SYSTEM,
                "options": {"fidelity": "analytic", "sizes": "1M", "op": "allreduce"},
                "axes": [{"path": "--ranks", "values": [8, 16]},
                         {"path": "chip.hbm.bandwidth_GBps", "values": [1000, 2000]}]}
        with open(os.path.join(self.dir, "spec.json"), "w") as f:
            json.dump(spec, f)

    def tearDown(self):
        for pid in self.started():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        subprocess.run(["rm", "-rf", self.dir])

    def started(self):
        try:
            with open(self.pids) as f:
                return [int(p) for p in f.read().split()]
        except OSError:
            return []

    def assertAllGone(self, pids):
        """Every pid exited (a zombie waiting for init to reap it counts)."""
        deadline = time.monotonic() + 5
        alive = pids
        while alive and time.monotonic() < deadline:
            alive = []
            for pid in pids:
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                            alive.append(pid)
                except OSError:
                    pass
            time.sleep(0.05)
        self.assertEqual(alive, [], "children left running")

    def sweep(self, *args):
        return subprocess.Popen([os.path.join(ROOT, "scripts", "tools", "npusim-sweep"), "spec.json",
                                 "--out", "out", *args], cwd=self.dir, env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def test_a_point_past_its_time_limit_is_killed_and_recorded_as_a_timeout(self):
        start = time.monotonic()
        p = self.sweep("-j", "4", "--timeout", "2")
        err = p.communicate(timeout=60)[1]
        self.assertLess(time.monotonic() - start, 30)
        self.assertEqual(p.returncode, 1, err)
        self.assertEqual(len(self.started()), 4)  # two slow points, a shell and a sleep each
        self.assertAllGone(self.started())
        self.assertIn("sweep: 4/4 done, 0 failed, 2 timed out, ETA 0s", err)
        with open(os.path.join(self.dir, "out", "results.csv")) as f:
            rows = [l.split(",") for l in f.read().splitlines()[1:]]
        self.assertEqual([(r[2], r[4]) for r in rows], [("8", "ok"), ("8", "ok"),
                                                        ("16", "timeout"), ("16", "timeout")])
        self.assertTrue(all(r[5] == "timed out after 2 s (--timeout)" for r in rows[2:]))
        with open(os.path.join(self.dir, "out", "failures.txt")) as f:
            self.assertEqual(f.read().splitlines()[0], "point 2 [ranks=16 "
                             "chip.hbm.bandwidth_GBps=1000]: timed out after 2 s (--timeout)")
        # a rerun under the same limit reuses the records; a longer limit runs them again
        p = self.sweep("--timeout", "2")
        err = p.communicate(timeout=60)[1]
        self.assertIn("4 already done, 0 to run", err)
        p = self.sweep("--timeout", "2.5")
        err = p.communicate(timeout=60)[1]
        self.assertIn("2 already done, 2 to run", err)
        self.assertAllGone(self.started())

    def interrupt(self, signum, expected_rc):
        p = self.sweep("-j", "4")
        deadline = time.monotonic() + 30
        while len(self.started()) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(len(self.started()), 4)
        p.send_signal(signum)
        err = p.communicate(timeout=30)[1]
        self.assertEqual(p.returncode, expected_rc, err)
        self.assertEqual(err.splitlines()[-1], f"npusim-sweep: interrupted "
                         f"({signal.Signals(signum).name}); finished points are kept, "
                         "rerun to resume")
        self.assertNotIn("Traceback", err)
        self.assertAllGone(self.started())
        points = os.listdir(os.path.join(self.dir, "out", "points"))
        self.assertLessEqual(len(points), 2)  # the fast points at most; no slow one recorded

    def test_sigterm_kills_the_running_children_and_ends_with_one_line(self):
        self.interrupt(signal.SIGTERM, 143)

    def test_sigint_kills_the_running_children_and_ends_with_one_line(self):
        self.interrupt(signal.SIGINT, 130)


class Tables(unittest.TestCase):
    def test_flatten_and_cells(self):
        flat = lib.flatten({"a": 1, "b": {"c": 2.5, "d": {"e": True}}, "l": [1, 2]})
        self.assertEqual(flat, {"a": 1, "b.c": 2.5, "b.d.e": True, "l": [1, 2]})
        self.assertEqual([lib.csv_cell(v) for v in (None, True, 0.1, 3, [1, 2])],
                         ["", "true", "0.1", "3", "[1,2]"])
        self.assertEqual([lib.number_or_text(v) for v in ("3", "3.0", "1e3", "x", "true")],
                         [3, 3.0, 1000.0, "x", True])


PLOT = os.path.join(ROOT, "scripts", "tools", "npusim-plot")
DESCRIPTION = "What-if: tensor parallelism against RoCE bandwidth on a made-up table"

# Run by a python with matplotlib: draws each chart of argv[2] (a JSON list of
# npusim-plot argument lists) with npusim-plot's own code and prints what the
# figure holds and where its parts are, in pixels (x0, y0, x1, y1).
PROBE = r"""
import importlib.machinery, importlib.util, json, sys
loader = importlib.machinery.SourceFileLoader("npusim_plot", sys.argv[1])
plot = importlib.util.module_from_spec(importlib.util.spec_from_loader("npusim_plot", loader))
loader.exec_module(plot)
found = []
for argv in json.loads(sys.argv[2]):
    sys.argv = ["npusim-plot"] + argv
    args = plot.parse_args()
    rows, columns, path = plot.load_rows(args.results, args.where)
    fig = plot.draw(args, rows, columns, path)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    ax = fig.axes[0]
    box = lambda b: [b.x0, b.y0, b.x1, b.y1]
    leg = ax.get_legend()
    found.append({
        "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
        "xscale": ax.get_xscale(), "figure": box(fig.bbox), "axes": box(ax.get_window_extent(r)),
        "ylim": [float(v) for v in ax.get_ylim()], "xlim": [float(v) for v in ax.get_xlim()],
        "xticks": [float(v) for v in ax.get_xticks()],
        "top": float(max([p.get_y() + p.get_height() for p in ax.patches]
                         + [y for l in ax.get_lines() for y in l.get_ydata()])),
        "everything": box(ax.get_tightbbox(r)), "title_box": box(ax.title.get_window_extent(r)),
        "panels": [a.get_title() for a in fig.axes if a.get_visible()],
        "panel_ylims": [[float(v) for v in a.get_ylim()] for a in fig.axes if a.get_visible()],
        "suptitle": fig._suptitle.get_text() if fig._suptitle else None,
        "legend": None if leg is None else {
            "title": leg.get_title().get_text(), "entries": [t.get_text() for t in leg.get_texts()],
            "box": box(leg.get_window_extent(r))}})
print(json.dumps(found))
"""


def python_with_matplotlib():
    """This python if it has matplotlib, else Debian's (npusim-plot does the
    same); None when neither has it."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if exe and os.access(exe, os.X_OK) and subprocess.run(
                [exe, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            return exe
    return None


def overlap(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


class Plots(unittest.TestCase):
    """npusim-plot's charts, inspected as matplotlib figures: axis labels with
    units, the legend right of the data area and never over it, nothing cut off
    at the figure's edge, the title from the spec; one line for fields of two
    units on one axis."""

    @classmethod
    def setUpClass(cls):
        cls.python = python_with_matplotlib()
        if cls.python is None:
            raise AssertionError("expected Debian's python3-matplotlib (scripts/setup.sh "
                                 "installs it), found none")
        cls.dir = tempfile.mkdtemp()
        head = ["point", "key", "tp", "roce", "status", "error", "step_time_s",
                "tokens_per_s_per_npu", "mfu", "breakdown.compute", "breakdown.exposed_tp_comm",
                "breakdown.exposed_ep_comm", "breakdown.pipeline_bubble", "memory.peak_GiB",
                "memory.fits", "size_bytes", "microbatches"]
        lines = [",".join(head)]
        for i, (tp, roce) in enumerate((t, r) for t in (1, 2, 4) for r in (12.5, 25)):
            step = 10.0 / tp + 50 / roce + (0 if tp == 1 else 1.0)
            lines.append(",".join(str(v) for v in (
                i, f"k{i}", tp, roce, "ok", "", step, 1000 / step, 0.4 + 0.01 * tp, 10.0 / tp,
                50 / roce, 0, 0 if tp == 1 else 1.0, 20.0 / tp, "true", 1024 ** tp, 100 + 8 * tp)))
        cls.table = os.path.join(cls.dir, "results.csv")
        with open(cls.table, "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(cls.dir, "sweep.json"), "w") as f:
            json.dump({"description": DESCRIPTION, "command": "train",
                       "columns": {"tp": "parallel.tp",
                                   "roce": "cluster.scale_out.nic_bandwidth_GBps"}}, f)
        cls.bare = os.path.join(cls.dir, "bare")  # the same table without sweep.json
        os.mkdir(cls.bare)
        with open(cls.table) as src, open(os.path.join(cls.bare, "results.csv"), "w") as dst:
            dst.write(src.read())

    def charts(self, *argvs):
        r = subprocess.run([self.python, "-c", PROBE, PLOT, json.dumps(argvs)],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def assert_laid_out(self, chart):
        """Legend outside the data area; every label, tick label, the title
        and the legend inside the figure; the title above the data."""
        fig = chart["figure"]
        everything = chart["everything"]
        self.assertTrue(fig[0] - 1 <= everything[0] and everything[2] <= fig[2] + 1
                        and fig[1] - 1 <= everything[1] and everything[3] <= fig[3] + 1,
                        f"something is cut off: {everything} outside the figure {fig}")
        self.assertGreaterEqual(chart["title_box"][1], chart["axes"][3] - 1, "title over the data")
        if chart["legend"]:
            self.assertFalse(overlap(chart["legend"]["box"], chart["axes"]),
                             f"legend {chart['legend']['box']} over the data area {chart['axes']}")

    def test_a_line_chart_has_units_on_both_axes_and_its_legend_outside(self):
        (c,) = self.charts([self.dir, "--x", "tp", "--y", "step_time_s", "--hue", "roce"])
        self.assert_laid_out(c)
        self.assertEqual(c["xlabel"], "tensor parallel (NPUs per group)")
        self.assertEqual(c["ylabel"], "step time (s)")
        self.assertEqual(c["legend"]["title"], "roce (GB/s)")  # the unit of the swept key
        self.assertEqual(c["legend"]["entries"], ["12.5", "25"])
        self.assertEqual(c["title"], DESCRIPTION)
        shown = [t for t in c["xticks"] if c["xlim"][0] <= t <= c["xlim"][1]]
        self.assertEqual(shown, [1, 2, 3, 4])  # whole degrees of parallelism, no tp 1.5

    def test_a_stacked_chart_says_what_is_stacked_and_its_unit(self):
        (c,) = self.charts([self.dir, "--x", "tp,roce", "--y", "breakdown.*", "--kind", "stacked"])
        self.assert_laid_out(c)
        self.assertEqual(c["ylabel"], "step time by part (s)")
        self.assertEqual(c["xlabel"], "tensor parallel (NPUs per group), roce (GB/s)")
        # top of the stack first; a part that is zero everywhere is left out
        self.assertEqual(c["legend"]["entries"], ["pipeline bubble", "exposed tp comm", "compute"])
        # the tallest bar ends in a zero part (no bubble at tp 1): still a margin above it
        self.assertGreater(c["ylim"][1], c["top"] * 1.01)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_bars_titles_and_a_log_scale(self):
        bar, bare, titled, sizes = self.charts(
            [self.dir, "--x", "tp", "--y", "tokens_per_s_per_npu", "--kind", "bar",
             "--where", "roce=25"],
            [self.bare, "--x", "tp", "--y", "mfu", "--hue", "roce"],
            [self.dir, "--x", "roce", "--y", "memory.peak_GiB", "--where", "tp=2",
             "--title", "peak\nmemory"],
            [self.dir, "--x", "size_bytes", "--y", "step_time_s", "--where", "roce=25"])
        for c in (bar, bare, titled, sizes):
            self.assert_laid_out(c)
        self.assertEqual(bar["ylabel"], "throughput per NPU (tokens/s)")
        self.assertIsNone(bar["legend"])  # one series: the axis says it all
        self.assertEqual(bare["title"], "MFU (fraction of peak) against tensor parallel (NPUs per group)")
        self.assertEqual(bare["legend"]["title"], "roce")  # no sweep.json: no unit known
        self.assertEqual(titled["title"], "peak memory")
        self.assertEqual(titled["ylabel"], "memory: peak (GiB)")
        self.assertEqual(titled["xscale"], "linear")
        self.assertEqual(sizes["xscale"], "log")  # 1 KiB to 1 TiB
        self.assertEqual(sizes["xlabel"], "size (bytes)")

    def test_panels_where_ratios_and_counts(self):
        """--col makes one panel per value, one y axis shared, the spec's
        title above them all; --where is named in the title (not over an
        explicit --title) and in the default file name; --slowdown over a rate
        is a ratio, over a time a slowdown; an axis that counts starts at 0."""
        panels, where, ratio, slow, counts = self.charts(
            [self.dir, "--x", "roce", "--y", "step_time_s", "--col", "tp"],
            [self.dir, "--x", "tp", "--y", "mfu", "--where", "roce=25"],
            [self.dir, "--x", "roce", "--y", "tokens_per_s_per_npu", "--slowdown", "25",
             "--where", "tp=2"],
            [self.dir, "--x", "roce", "--y", "step_time_s", "--slowdown", "25", "--where", "tp=2"],
            [self.dir, "--x", "tp", "--y", "microbatches", "--where", "roce=25"])
        self.assertEqual(panels["panels"], ["tp=1", "tp=2", "tp=4"])
        self.assertEqual(len({tuple(y) for y in panels["panel_ylims"]}), 1)  # one y axis
        self.assertEqual(panels["suptitle"], DESCRIPTION)
        self.assertTrue(where["title"].endswith("[roce=25]"), where["title"])
        self.assertTrue(ratio["ylabel"].startswith("ratio: throughput per NPU"), ratio["ylabel"])
        self.assertTrue(slow["ylabel"].startswith("slowdown: step time"), slow["ylabel"])
        self.assertEqual(counts["ylim"][0], 0)  # 108 to 132 micro-batches, from 0
        r = subprocess.run([self.python, PLOT, self.dir, "--x", "tp", "--y", "mfu", "--where",
                            "roce=25"], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), os.path.join(self.dir, "mfu-vs-tp-where-roce=25.png"))
        self.assertTrue(os.path.isfile(r.stdout.strip()))

    def test_fields_of_two_units_or_not_numbers_are_refused_in_one_line(self):
        for y, found in (("step_time_s,mfu", "expected fields of one unit (one axis), found s: "
                          "step_time_s; fraction of peak: mfu"),
                         ("memory.fits", "expected a column of numbers, found 'memory.fits'")):
            out = os.path.join(self.dir, "refused.png")
            r = subprocess.run([self.python, PLOT, self.dir, "--x", "tp", "--y", y,
                                "--where", "roce=25", "--out", out],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
            self.assertIn(found, r.stderr)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
