"""test_sweep_lib.py - unit tests of scripts/npusim_sweep_lib.py: axis
expansion (grid, zip, explicit points, ranges), filters (names, short names,
dotted paths, refused code), spec errors, flattening and CSV cells.

  NPUSIM=build/npusim python3 -m unittest tests/test_sweep_lib.py
(npusim is needed for its schema and --help; nothing is simulated.)
"""

import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
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


class Tables(unittest.TestCase):
    def test_flatten_and_cells(self):
        flat = lib.flatten({"a": 1, "b": {"c": 2.5, "d": {"e": True}}, "l": [1, 2]})
        self.assertEqual(flat, {"a": 1, "b.c": 2.5, "b.d.e": True, "l": [1, 2]})
        self.assertEqual([lib.csv_cell(v) for v in (None, True, 0.1, 3, [1, 2])],
                         ["", "true", "0.1", "3", "[1,2]"])
        self.assertEqual([lib.number_or_text(v) for v in ("3", "3.0", "1e3", "x", "true")],
                         [3, 3.0, 1000.0, "x", True])


if __name__ == "__main__":
    unittest.main()
