"""End-to-end tests of the flashkm command: formats, outputs, exit codes, errors, streaming.

Standard library only (numpy is not available to ctest). Run by ctest as
  test_cli.py --flashkm PATH --make-data PATH [unittest args, e.g. -k Errors]
"""
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest
from array import array

FLASHKM = None
MAKE_DATA = None
SANITIZED = False  # sanitizer builds inflate memory use: peak RSS is not checked there
MPIRUN = None  # set by --mpirun: the Distributed tests run the command under it


def npy_bytes(values, shape, descr="<f4", fortran=False, version=1):
    """A .npy file's bytes; `values` are in C order (transposed here for Fortran order)."""
    if fortran and len(shape) == 2:
        rows, cols = shape
        values = [values[r * cols + c] for c in range(cols) for r in range(rows)]
    code = descr[1:]
    fmt = {"f2": "e", "f4": "f", "f8": "d", "i4": "i", "u1": "B"}[code]
    order = ">" if descr[0] == ">" else "<"
    data = struct.pack(order + fmt * len(values), *values)
    shape_txt = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, "True" if fortran else "False", shape_txt)
    prefix_len = 10 if version == 1 else 12
    pad = (64 - (prefix_len + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    if version == 1:
        pre = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header))
    else:
        pre = b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", len(header))
    return pre + header.encode("latin1") + data


def read_npy(path):
    """(descr, shape, values) of a C-order .npy written by flashkm."""
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:6] == b"\x93NUMPY", path
    hlen = struct.unpack("<H", raw[8:10])[0]
    header = raw[10:10 + hlen].decode("latin1")
    d = eval(header)  # a Python literal written by our own writer
    assert not d["fortran_order"]
    code = {"<f4": "f", "<f8": "d", "<i4": "i", "<f2": "e"}[d["descr"]]
    count = 1
    for s in d["shape"]:
        count *= s
    values = list(struct.unpack("<" + code * count, raw[10 + hlen:]))
    return d["descr"], tuple(d["shape"]), values


def fvecs_bytes(rows, kind="f"):
    out = b""
    for r in rows:
        out += struct.pack("<i", len(r)) + struct.pack("<" + kind * len(r), *r)
    return out


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="flashkm_cli_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, data):
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def run_km(self, *args, rc=0, timeout=600):
        p = subprocess.run([FLASHKM, *args], capture_output=True, text=True, timeout=timeout, cwd=self.dir)
        if rc is not None:
            self.assertEqual(p.returncode, rc, "flashkm %s\nstdout: %s\nstderr: %s" % (" ".join(args), p.stdout, p.stderr))
        return p

    def make_data(self, name, rows, cols, k, seed=1, dtype="float32", offset=0.0):
        p = self.path(name)
        subprocess.run([MAKE_DATA, p, str(rows), str(cols), str(k), str(seed), dtype, str(offset)], check=True)
        return p

    def assert_no_temporaries(self):
        left = [f for f in os.listdir(self.dir) if ".tmp" in f]
        self.assertEqual(left, [], "temporary files left behind")


def small_grid(rows, cols, seed):
    """Small integers in 0..255 (exact in every dtype and format, and valid .bvecs bytes)."""
    x = seed
    out = []
    for _ in range(rows * cols):
        x = (x * 1103515245 + 12345) % (1 << 31)
        out.append(float((x >> 8) % 256))
    return out


class Formats(Base):
    def test_fit_writes_centroids_labels_and_json(self):
        x = self.make_data("x.npy", 5000, 16, 5, seed=3)
        p = self.run_km("fit", x, "-k", "5", "-o", "c.npy", "--labels", "l.npy", "--json", "--seed", "2")
        j = json.loads(p.stdout)
        self.assertEqual((j["rows"], j["cols"], j["k"]), (5000, 16, 5))
        self.assertFalse(j["streamed"])
        self.assertEqual(sum(j["cluster_sizes"]), 5000)
        self.assertEqual(len(j["history"]), j["n_iter"])
        self.assertTrue(all(h["inertia"] > 0 for h in j["history"]))
        descr, shape, c = read_npy(self.path("c.npy"))
        self.assertEqual((descr, shape), ("<f4", (5, 16)))
        descr, shape, labels = read_npy(self.path("l.npy"))
        self.assertEqual((descr, shape), ("<i4", (5000,)))
        self.assertEqual(sorted(set(labels)), list(range(5)))
        self.assertIn("converged", p.stderr)
        self.assert_no_temporaries()

    def test_prune_on_and_off_write_the_same_bits(self):
        x = self.make_data("x.npy", 20000, 16, 64, seed=5)
        runs = {}
        for mode in ("off", "on", "auto"):
            p = self.run_km("fit", x, "-k", "64", "-o", mode + ".npy", "--labels", mode + "_l.npy", "--json",
                            "--seed", "3", "--tol", "0", "--prune", mode)
            runs[mode] = json.loads(p.stdout)
            self.assertIn("distances", p.stderr)
        for mode in ("on", "auto"):
            with open(self.path("off.npy"), "rb") as a, open(self.path(mode + ".npy"), "rb") as b:
                self.assertEqual(a.read(), b.read(), mode)
            with open(self.path("off_l.npy"), "rb") as a, open(self.path(mode + "_l.npy"), "rb") as b:
                self.assertEqual(a.read(), b.read(), mode)
            self.assertEqual(runs[mode]["n_iter"], runs["off"]["n_iter"])
        self.assertTrue(all(h["distances"] == 20000 * 64 for h in runs["off"]["history"]))
        pruned = sum(h["distances"] for h in runs["on"]["history"])
        self.assertLess(pruned, sum(h["distances"] for h in runs["off"]["history"]) / 2)
        p = self.run_km("fit", x, "-k", "4", "--prune", "maybe", rc=None)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--prune", p.stderr)

    def test_seeding_is_reported_and_k_means_parallel_is_deterministic(self):
        x = self.make_data("x.npy", 20000, 16, 40, seed=6)
        runs = {}
        for init in ("k-means++", "k-means||"):
            for threads in ("1", "2"):
                name = {"k-means++": "pp", "k-means||": "par"}[init] + threads
                p = self.run_km("fit", x, "-k", "40", "-o", name + ".npy", "--json", "--seed", "4", "--init", init,
                                "--threads", threads)
                j = json.loads(p.stdout)
                self.assertEqual(j["init"], init)
                self.assertGreater(j["init_seconds"], 0)
                self.assertLess(j["init_seconds"], j["seconds"])
                self.assertIn("seeding (%s)" % ("k-means||" if init == "k-means||" else "k-means++"), p.stderr)
                self.assertIn("seeding (k-means++) 40/40 centres", p.stderr)
                with open(self.path(name + ".npy"), "rb") as f:
                    runs[name] = f.read()
        self.assertEqual(runs["pp1"], runs["pp2"])
        self.assertEqual(runs["par1"], runs["par2"])
        self.assertNotEqual(runs["pp1"], runs["par1"])
        # k-means||'s rounds and oversampling: the defaults spelled out give the same bits, other
        # values other seeds (one Lloyd step keeps them apart); bad values are usage errors.
        for name, extra in (("d", ["--init-rounds", "5", "--init-oversampling", "2"]), ("r", ["--init-rounds", "2"]),
                            ("o", ["--init-oversampling", "0.5"])):
            p = self.run_km("fit", x, "-k", "40", "-o", name + ".npy", "--json", "--seed", "4", "--init", "k-means||",
                            "--max-iter", "1", *extra)
            j = json.loads(p.stdout)
            self.assertEqual(j["init_rounds"], int(extra[extra.index("--init-rounds") + 1]) if "--init-rounds" in extra else 5)
            self.assertEqual(j["init_oversampling"],
                             float(extra[extra.index("--init-oversampling") + 1]) if "--init-oversampling" in extra else 2.0)
            with open(self.path(name + ".npy"), "rb") as f:
                runs[name] = f.read()
        self.run_km("fit", x, "-k", "40", "-o", "one.npy", "--seed", "4", "--init", "k-means||", "--max-iter", "1")
        with open(self.path("one.npy"), "rb") as f:
            one = f.read()
        self.assertEqual(runs["d"], one)
        self.assertNotEqual(runs["r"], one)
        self.assertNotEqual(runs["o"], one)
        for bad in (["--init-rounds", "0"], ["--init-oversampling", "0"], ["--init-oversampling", "-1"]):
            p = self.run_km("fit", x, "-k", "40", "--init", "k-means||", *bad, rc=None)
            self.assertEqual(p.returncode, 2, bad)
            self.assertIn(bad[0], p.stderr)

    def test_every_format_gives_the_same_centroids(self):
        rows, cols, k = 600, 5, 4
        vals = small_grid(rows, cols, 7)
        init = npy_bytes(vals[: k * cols], (k, cols))
        self.write("init.npy", init)
        files = {
            "a.npy": npy_bytes(vals, (rows, cols)),
            "be.npy": npy_bytes(vals, (rows, cols), descr=">f4"),
            "f.npy": npy_bytes(vals, (rows, cols), fortran=True),
            "v2.npy": npy_bytes(vals, (rows, cols), version=2),
            "v3.npy": npy_bytes(vals, (rows, cols), version=3),
            "h.npy": npy_bytes(vals, (rows, cols), descr="<f2"),
            "hbe.npy": npy_bytes(vals, (rows, cols), descr=">f2"),
            "hf.npy": npy_bytes(vals, (rows, cols), descr="<f2", fortran=True),
            "x.fvecs": fvecs_bytes([vals[r * cols:(r + 1) * cols] for r in range(rows)]),
            "x.bvecs": fvecs_bytes([[int(v) for v in vals[r * cols:(r + 1) * cols]] for r in range(rows)], "B"),
            "x.raw": struct.pack("<%df" % len(vals), *vals),
        }
        results = {}
        for name, data in files.items():
            self.write(name, data)
            extra = ["--dim", str(cols)] if name.endswith(".raw") else []
            self.run_km("fit", name, "--init", "init.npy", "-o", name + ".c.npy", "-q", *extra)
            with open(self.path(name + ".c.npy"), "rb") as f:
                results[name] = f.read()
        for name, data in results.items():
            self.assertEqual(data, results["a.npy"], name + " differs from the float32 .npy")
        # CSV (float64 centroids), with a header line and CRLF line ends.
        lines = ["a,b,c,d,e"] + [",".join("%g" % v for v in vals[r * cols:(r + 1) * cols]) for r in range(rows)]
        self.write("x.csv", ("\r\n".join(lines) + "\r\n").encode())
        self.run_km("fit", "x.csv", "--init", "init.npy", "-o", "csv.c.npy", "-q")
        descr, shape, c64 = read_npy(self.path("csv.c.npy"))
        _, _, c32 = read_npy(self.path("a.npy.c.npy"))
        self.assertEqual((descr, shape), ("<f8", (k, cols)))
        for a, b in zip(c64, c32):
            self.assertAlmostEqual(a, b, delta=1e-4 * max(1.0, abs(a)))

    def test_float16_is_clustered_in_16_bits_with_the_float32_result(self):
        """Non-integer float16 data, K = 40: fit and predict on the 16-bit rows (AMX tiles where
        the CPU has AMX-BF16) give the bytes of the float32 file's fit and predict."""
        rows, cols, k = 4000, 48, 40
        x = 12345
        vals = []
        for _ in range(rows * cols):
            x = (x * 1103515245 + 12345) % (1 << 31)
            vals.append(struct.unpack("<e", struct.pack("<e", ((x >> 8) % 4096) / 512.0 - 4.0))[0])
        self.write("h.npy", npy_bytes(vals, (rows, cols), descr="<f2"))
        self.write("f.npy", npy_bytes(vals, (rows, cols)))
        out = {}
        for name in ("h", "f"):
            p = self.run_km("fit", name + ".npy", "-k", str(k), "--seed", "5", "-o", name + ".c.npy",
                            "--labels", name + ".l.npy", "--json", "-q")
            out[name] = json.loads(p.stdout)
        for name in ("h", "f"):
            self.run_km("predict", name + ".npy", "--centroids", "f.c.npy", "-o", name + ".p.npy", "-q")
        for suffix in (".c.npy", ".l.npy", ".p.npy"):
            with open(self.path("h" + suffix), "rb") as a, open(self.path("f" + suffix), "rb") as b:
                self.assertEqual(a.read(), b.read(), suffix)
        with open("/proc/cpuinfo") as f:
            amx = " amx_bf16 " in f.read().replace("\n", " ")
        if amx:
            self.assertEqual(out["h"]["target"], "AMX_BF16")
        self.assertEqual(out["h"]["inertia"], out["f"]["inertia"])
        vals[1234] = float("nan")
        self.write("nan.npy", npy_bytes(vals, (rows, cols), descr="<f2"))
        p = self.run_km("fit", "nan.npy", "-k", "3", "-q", rc=1)
        for part in ("nan.npy", "NaN", "row 25", "column 34"):
            self.assertIn(part, p.stderr)

    def test_info_reports_format_shape_and_statistics(self):
        vals = small_grid(40, 3, 1)
        self.write("be.npy", npy_bytes(vals, (40, 3), descr=">f8", fortran=True, version=2))
        p = self.run_km("info", "be.npy", "--json")
        j = json.loads(p.stdout)
        self.assertEqual((j["format"], j["dtype"], j["rows"], j["cols"]), ("npy", "float64", 40, 3))
        self.assertTrue(j["big_endian"] and j["fortran_order"])
        self.assertEqual(j["npy_version"], 2)
        self.assertEqual(j["min"], min(vals))
        self.assertEqual(j["max"], max(vals))
        self.assertAlmostEqual(j["mean"], sum(vals) / len(vals))
        p = self.run_km("info", "be.npy")
        self.assertIn("40 x 3", p.stdout)
        self.assertIn("big-endian", p.stdout)

    def test_predict_gives_fits_labels(self):
        x = self.make_data("x.npy", 3000, 9, 6, seed=4)
        self.run_km("fit", x, "-k", "6", "-o", "c.npy", "--labels", "l.npy", "-q")
        p = self.run_km("predict", x, "--centroids", "c.npy", "-o", "p.npy", "--json")
        self.assertEqual(json.loads(p.stdout)["rows"], 3000)
        self.assertEqual(read_npy(self.path("p.npy"))[2], read_npy(self.path("l.npy"))[2])

    def test_weights_and_threads_do_not_change_the_result(self):
        x = self.make_data("x.npy", 4000, 7, 5, seed=5)
        w = [1.0 + (i % 7) * 0.25 for i in range(4000)]
        self.write("w.npy", npy_bytes(w, (4000,), descr="<f8"))
        self.run_km("fit", x, "-k", "5", "--weights", "w.npy", "--threads", "1", "-o", "c1.npy", "-q")
        self.run_km("fit", x, "-k", "5", "--weights", "w.npy", "--threads", "2", "-o", "c2.npy", "-q")
        self.run_km("fit", x, "-k", "5", "-o", "c3.npy", "-q")
        with open(self.path("c1.npy"), "rb") as a, open(self.path("c2.npy"), "rb") as b, open(self.path("c3.npy"), "rb") as c:
            ca, cb, cc = a.read(), b.read(), c.read()
        self.assertEqual(ca, cb)
        self.assertNotEqual(ca, cc)

    def test_help_and_version(self):
        for sub in ([], ["fit"], ["predict"], ["info"], ["demo"]):
            p = self.run_km(*sub, "--help")
            self.assertIn("--help", p.stdout)
        self.assertIn("--memory-limit", self.run_km("fit", "--help").stdout)
        self.assertIn("0.1.0", self.run_km("--version").stdout)


class Errors(Base):
    """Each bad input: a message naming the file and the place, exit code 1 or 2, no output."""

    def expect_error(self, args, rc, *needles):
        p = self.run_km(*args, rc=rc)
        for n in needles:
            self.assertIn(n, p.stderr, "flashkm %s" % " ".join(args))
        self.assertNotIn("internal error", p.stderr)
        self.assertFalse(os.path.exists(self.path("out.npy")), "an output was written")
        self.assert_no_temporaries()
        return p

    def fit(self, name, *extra, k="2"):
        return ["fit", name, "-k", k, "-o", "out.npy", "--labels", "lab.npy", *extra]

    def test_usage_errors_exit_2(self):
        x = self.make_data("x.npy", 100, 3, 2)
        self.expect_error(["fit", x, "-o", "out.npy"], 2, "-k")
        self.expect_error(["fit", x, "-k", "2", "--bogus"], 2, "bogus")
        self.expect_error(["fit", x, "-k", "two", "-o", "out.npy"], 2, "two")
        self.expect_error(["fit", x, "-k", "2", "-o", "out.npy", "--memory-limit", "12Q"], 2, "12Q")
        self.expect_error(["fit", x, "-k", "2", "-o", "out.npy", "--max-iter", "0"], 2, "--max-iter")
        self.expect_error(["fit", x, "-k", "2", "-o", x], 2, "refusing to overwrite")
        self.expect_error(["frobnicate"], 2)

    def test_missing_unreadable_unknown_empty(self):
        self.expect_error(self.fit("nope.npy"), 1, "nope.npy")
        os.mkdir(self.path("d.npy"))
        self.expect_error(self.fit("d.npy"), 1, "d.npy")
        self.write("x.parquet", b"PAR1")
        self.expect_error(self.fit("x.parquet"), 1, "x.parquet", ".npy")
        self.write("e.npy", b"")
        self.expect_error(self.fit("e.npy"), 1, "e.npy")
        self.write("e.fvecs", b"")
        self.expect_error(self.fit("e.fvecs"), 1, "e.fvecs")
        self.write("x.raw", struct.pack("<6f", *range(6)))
        self.expect_error(self.fit("x.raw"), 2, "--dim")

    def test_bad_npy_files(self):
        good = npy_bytes(small_grid(10, 3, 2), (10, 3))
        self.write("magic.npy", b"\x93NUMPX" + good[6:])
        self.expect_error(self.fit("magic.npy"), 1, "magic.npy", "magic")
        self.write("short.npy", good[:-5])
        self.expect_error(self.fit("short.npy"), 1, "short.npy", "bytes")
        self.write("long.npy", good + b"\0" * 8)
        self.expect_error(self.fit("long.npy"), 1, "long.npy", "bytes")
        garbage = bytearray(good)
        garbage[10:30] = b"{'descr': <f4 ??? ]]"
        self.write("garbage.npy", bytes(garbage))
        self.expect_error(self.fit("garbage.npy"), 1, "garbage.npy")
        for descr, name in (("<U8", "str.npy"), ("<c8", "cplx.npy"), ("|O", "obj.npy"), ("<i4", "int.npy")):
            head = npy_bytes([1.0] * 4, (2, 2))
            text = head.replace(b"'<f4'", ("'%s'" % descr).encode().ljust(5))
            self.write(name, text)
            self.expect_error(self.fit(name), 1, name, descr)
        self.write("oned.npy", npy_bytes([1.0, 2.0, 3.0], (3,)))
        self.expect_error(self.fit("oned.npy"), 1, "oned.npy", "1-D")
        self.write("zero.npy", npy_bytes([], (0, 3)))
        self.expect_error(self.fit("zero.npy"), 1, "zero.npy")

    def test_fewer_rows_than_k_and_non_finite_values(self):
        self.write("few.npy", npy_bytes(small_grid(3, 2, 1), (3, 2)))
        self.expect_error(self.fit("few.npy", k="5"), 1, "few.npy", "3 rows")
        vals = small_grid(50, 4, 3)
        vals[17 * 4 + 2] = float("nan")
        self.write("nan.npy", npy_bytes(vals, (50, 4)))
        self.expect_error(self.fit("nan.npy"), 1, "nan.npy", "NaN", "row 17", "column 2")
        vals[17 * 4 + 2] = 1.0
        vals[31 * 4 + 0] = float("-inf")
        self.write("inf.npy", npy_bytes(vals, (50, 4)))
        self.expect_error(self.fit("inf.npy"), 1, "inf.npy", "inf", "row 31", "column 0")

    def test_bad_vecs_files(self):
        rows = [[1.0, 2.0, 3.0]] * 5
        good = fvecs_bytes(rows)
        self.write("trunc.fvecs", good[:-2])
        self.expect_error(self.fit("trunc.fvecs"), 1, "trunc.fvecs")
        self.write("change.fvecs", good + fvecs_bytes([[1.0, 2.0]]) + fvecs_bytes([[1.0, 2.0, 3.0, 4.0]]))
        self.expect_error(self.fit("change.fvecs"), 1, "change.fvecs")
        self.write("neg.fvecs", struct.pack("<i", -3) + b"\0" * 12)
        self.expect_error(self.fit("neg.fvecs"), 1, "neg.fvecs")
        self.write("trunc.bvecs", fvecs_bytes([[1, 2, 3]] * 4, "B")[:-1])
        self.expect_error(self.fit("trunc.bvecs"), 1, "trunc.bvecs")

    def test_bad_csv(self):
        self.write("bad.csv", b"1,2,3\n4,five,6\n7,8,9\n")
        self.expect_error(self.fit("bad.csv"), 1, "bad.csv", "line 2", "column 2", "five")
        self.write("ragged.csv", b"1,2,3\n4,5\n7,8,9\n")
        self.expect_error(self.fit("ragged.csv"), 1, "ragged.csv", "line 2")

    def test_bad_weights_and_init_files(self):
        x = self.make_data("x.npy", 100, 3, 2)
        self.write("w.npy", npy_bytes([1.0] * 99, (99,), descr="<f8"))
        self.expect_error(self.fit(x, "--weights", "w.npy"), 1, "w.npy", "99", "100")
        self.write("neg.npy", npy_bytes([-1.0] * 100, (100,), descr="<f8"))
        self.expect_error(self.fit(x, "--weights", "neg.npy"), 1)
        self.write("init.npy", npy_bytes([1.0] * 8, (2, 4)))
        self.expect_error(self.fit(x, "--init", "init.npy"), 1, "init.npy", "4 columns")
        self.write("init3.npy", npy_bytes([1.0] * 9, (3, 3)))
        self.expect_error(self.fit(x, "--init", "init3.npy", k="2"), 2, "init3.npy")

    def test_predict_errors(self):
        x = self.make_data("x.npy", 100, 3, 2)
        self.write("c.npy", npy_bytes([1.0] * 8, (2, 4)))
        p = self.run_km("predict", x, "--centroids", "c.npy", "-o", "out.npy", rc=1)
        self.assertIn("c.npy", p.stderr)
        self.run_km("predict", x, "-o", "out.npy", rc=2)
        self.assertFalse(os.path.exists(self.path("out.npy")))


class Outputs(Base):
    def test_failed_run_keeps_the_previous_output(self):
        vals = small_grid(50, 4, 3)
        vals[5] = float("nan")
        self.write("nan.npy", npy_bytes(vals, (50, 4)))
        self.write("out.npy", b"previous content")
        self.run_km("fit", "nan.npy", "-k", "2", "-o", "out.npy", rc=1)
        with open(self.path("out.npy"), "rb") as f:
            self.assertEqual(f.read(), b"previous content")
        self.assert_no_temporaries()

    def test_unwritable_destination_fails_before_fitting(self):
        x = self.make_data("x.npy", 100, 3, 2)
        p = self.run_km("fit", x, "-k", "2", "-o", "no/such/dir/c.npy", rc=1)
        self.assertIn("no/such/dir", p.stderr)
        self.assertNotIn("iter", p.stderr)

    def test_interrupt_writes_nothing(self):
        # Uniform noise with many clusters converges slowly: there is time to interrupt.
        x = self.make_data("x.npy", 200000, 16, 1, seed=9)
        proc = subprocess.Popen([FLASHKM, "fit", x, "-k", "400", "--tol", "0", "--max-iter", "100000",
                                 "-o", "c.npy", "--labels", "l.npy", "--init", "random"],
                                cwd=self.dir, stderr=subprocess.PIPE, text=True)
        seen = ""
        while "iter" not in seen:
            line = proc.stderr.readline()
            self.assertTrue(line, "no progress before exit: " + seen)
            seen += line
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        self.assertEqual(proc.wait(timeout=120), 130, seen + rest)
        self.assertIn("no output written", rest)
        self.assertFalse(os.path.exists(self.path("c.npy")))
        self.assertFalse(os.path.exists(self.path("l.npy")))
        self.assert_no_temporaries()


class Batch(Base):
    def test_a_3d_npy_is_a_batch_of_independent_problems(self):
        b, n, d, k = 3, 400, 5, 4
        members = [small_grid(n, d, 11 + i) for i in range(b)]
        self.write("batch.npy", npy_bytes(sum(members, []), (b, n, d)))
        j = json.loads(self.run_km("fit", "batch.npy", "-k", str(k), "--init", "random", "--seed", "9", "-o", "c.npy",
                                   "--labels", "l.npy", "--json", "-q").stdout)
        self.assertEqual((j["batch"], j["rows"], j["k"]), (b, n, k))
        self.assertEqual(len(j["members"]), b)
        descr, shape, c = read_npy(self.path("c.npy"))
        self.assertEqual(shape, (b, k, d))
        _, lshape, labels = read_npy(self.path("l.npy"))
        self.assertEqual(lshape, (b, n))
        for i in range(b):  # each member is its own solo fit
            self.write("m%d.npy" % i, npy_bytes(members[i], (n, d)))
            self.run_km("fit", "m%d.npy" % i, "-k", str(k), "--init", "random", "--seed", "9", "-o", "mc%d.npy" % i,
                        "--labels", "ml%d.npy" % i, "-q")
            self.assertEqual(read_npy(self.path("mc%d.npy" % i))[2], c[i * k * d:(i + 1) * k * d])
            self.assertEqual(read_npy(self.path("ml%d.npy" % i))[2], labels[i * n:(i + 1) * n])
        self.assertIn("3 x 400 x 5", self.run_km("info", "batch.npy").stdout)
        p = self.run_km("fit", "batch.npy", "-k", "500", "-o", "c2.npy", rc=1)
        self.assertIn("400 rows per problem", p.stderr)


class Report(Base):
    def test_fit_report_renders_in_chromium(self):
        x = self.make_data("x.npy", 20000, 12, 7, seed=6)
        j = json.loads(self.run_km("fit", x, "-k", "7", "--n-init", "2", "--report", "r.html", "--json", "-q",
                                   "-o", "c.npy").stdout)
        kept = [h for h in j["history"] if h["run"] == j["best_init"]]
        check = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_report.py")
        p = subprocess.run([sys.executable, check, self.path("r.html"), "--points", str(len(kept)), "--bars", "7"],
                           capture_output=True, text=True, timeout=180)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


class Stream(Base):
    def test_streamed_fit_is_bitwise_the_in_memory_fit(self):
        # 200,000 x 256 float32 = 195 MiB, over four times a 48 MiB limit.
        x = self.make_data("big.npy", 200000, 256, 16, seed=11, offset=30.0)
        limit = 48 << 20
        self.assertGreaterEqual(os.path.getsize(x), 4 * limit)
        args = ["fit", x, "-k", "16", "--init", "random", "--max-iter", "8", "--seed", "4", "--json", "-q"]
        mem = json.loads(self.run_km(*args, "-o", "cm.npy", "--labels", "lm.npy").stdout)
        st = json.loads(self.run_km(*args, "-o", "cs.npy", "--labels", "ls.npy", "--memory-limit", "48M").stdout)
        self.assertFalse(mem["streamed"])
        self.assertTrue(st["streamed"])
        self.assertGreaterEqual(st["stream"]["passes"], st["n_iter"])
        for a, b in (("cm.npy", "cs.npy"), ("lm.npy", "ls.npy")):
            with open(self.path(a), "rb") as f, open(self.path(b), "rb") as g:
                self.assertEqual(f.read(), g.read(), a + " vs " + b)
        # Times differ, and so may the distances computed: a memory limit without room for the
        # pruning bounds prunes less (here not at all), with bitwise the same result.
        self.assertEqual(mem["history"], [dict(h, seconds=m["seconds"], distances=m["distances"])
                                          for h, m in zip(st["history"], mem["history"])])
        self.assertTrue(all(h["distances"] == 200000 * 16 for h in st["history"]))
        # Peak memory: the limit plus the process's own fixed footprint (code, libraries,
        # thread stacks), measured by a run on a tiny file. (AddressSanitizer's shadow memory
        # and quarantine make RSS meaningless in sanitizer builds; the release build checks it.)
        if not SANITIZED:
            tiny = self.make_data("tiny.npy", 100, 4, 2)
            base = json.loads(self.run_km("fit", tiny, "-k", "2", "--json", "-q", "-o", "t.npy").stdout)["peak_rss"]
            self.assertLessEqual(st["peak_rss"], limit + base + (8 << 20),
                                 "peak RSS %d MiB, limit 48 MiB, baseline %d MiB" % (st["peak_rss"] >> 20, base >> 20))
        # predict streams too, with the same labels.
        p = json.loads(self.run_km("predict", x, "--centroids", "cm.npy", "-o", "ps.npy", "--json", "-q",
                                   "--memory-limit", "48M").stdout)
        self.assertTrue(p["streamed"])
        with open(self.path("ps.npy"), "rb") as f, open(self.path("lm.npy"), "rb") as g:
            self.assertEqual(f.read(), g.read())

    def test_seeding_sketch_only_where_it_fits(self):
        # 40,000 x 64 float32 (10.2 MB) with 56 bytes a row of state fits in 14 MiB, but not
        # with k-means++'s 8-bit sketch (76 bytes a row more): the rows stay in memory and the
        # seeding runs without the sketch, with bitwise the same result.
        # k-means|| too (its rounds use the sketch).
        x = self.make_data("x.npy", 40000, 64, 4, seed=5)
        for init in ("k-means++", "k-means||"):
            args = ["fit", x, "-k", "4", "--prune", "off", "--max-iter", "5", "--seed", "2", "--json", "-q",
                    "--init", init]
            tight = json.loads(self.run_km(*args, "-o", "ct.npy", "--memory-limit", "14M").stdout)
            roomy = json.loads(self.run_km(*args, "-o", "cr.npy", "--memory-limit", "64M").stdout)
            self.assertFalse(tight["streamed"], init)
            self.assertFalse(roomy["streamed"], init)
            self.assertFalse(tight["seed_sketch"], init)
            self.assertTrue(roomy["seed_sketch"], init)
            with open(self.path("ct.npy"), "rb") as f, open(self.path("cr.npy"), "rb") as g:
                self.assertEqual(f.read(), g.read(), init)

    def test_limit_too_small_is_a_usage_error(self):
        x = self.make_data("x.npy", 50000, 64, 4)
        p = self.run_km("fit", x, "-k", "4", "--memory-limit", "4M", "-o", "c.npy", rc=2)
        self.assertIn("--memory-limit", p.stderr)
        self.assertIn("streaming needs", p.stderr)
        self.assertFalse(os.path.exists(self.path("c.npy")))


class Json(Base):
    """--json is parsed for every command and every way of holding the data."""

    FIT_KEYS = {"command", "input", "format", "dtype", "rows", "cols", "k", "init", "n_init", "best_init", "n_iter",
                "converged", "stop_reason", "inertia", "seconds", "init_seconds", "read_seconds", "target",
                "threads", "ranks", "streamed", "holding", "memory_limit", "peak_rss", "cluster_sizes", "outputs",
                "history"}
    HISTORY_KEYS = {"run", "iteration", "inertia", "center_shift", "labels_changed", "distances",
                    "empty_relocated", "seconds"}

    def check_fit(self, j, rows, k, holding):
        self.assertTrue(self.FIT_KEYS <= set(j), sorted(self.FIT_KEYS - set(j)))
        self.assertEqual((j["command"], j["rows"], j["k"], j["holding"]), ("fit", rows, k, holding))
        self.assertEqual(j["streamed"], holding == "streamed")
        self.assertEqual(sum(j["cluster_sizes"]), rows)
        self.assertEqual(len(j["history"]), j["n_iter"])
        for h in j["history"]:
            self.assertEqual(set(h), self.HISTORY_KEYS)
        self.assertIsInstance(j["inertia"], float)
        if holding == "streamed":
            self.assertEqual(set(j["stream"]), {"passes", "chunk_rows", "bytes_read", "read_seconds", "wait_seconds"})
        else:
            self.assertNotIn("stream", j)

    def test_fit_and_predict_in_memory_16_bit_and_streamed(self):
        # Streaming holds two chunks of 32768 rows of 128 float32 (32 MiB), so the files are
        # larger than that: 100,000 float32 rows (49 MiB) and 200,000 float16 rows (49 MiB; a
        # block of 1,000 rows repeated, duplicates being data too).
        cols = 128
        x = self.make_data("x.npy", 100000, cols, 6, seed=3)
        block = npy_bytes(small_grid(1000, cols, 5), (1000, cols), "<f2")
        header = npy_bytes([], (200000, cols), "<f2")
        h = self.write("h.npy", header + block[len(npy_bytes([], (1000, cols), "<f2")):] * 200)
        for data, rows, limit, holding in ((x, 100000, None, "in memory"), (x, 100000, "40M", "streamed"),
                                           (h, 200000, None, "in memory, 16-bit"), (h, 200000, "45M", "streamed")):
            extra = ["--memory-limit", limit] if limit else []
            fit = json.loads(self.run_km("fit", data, "-k", "6", "-o", "c.npy", "--json", "-q", "--max-iter", "5",
                                         *extra).stdout)
            self.check_fit(fit, rows, 6, holding)
            pred = json.loads(self.run_km("predict", data, "--centroids", "c.npy", "-o", "l.npy", "--json", "-q",
                                          *extra).stdout)
            self.assertEqual((pred["command"], pred["rows"], pred["k"], pred["holding"]), ("predict", rows, 6, holding))
            self.assertEqual(sum(pred["cluster_sizes"]), rows)
            self.assertEqual(pred["outputs"], {"labels": "l.npy"})

    def test_info_json(self):
        x = self.make_data("x.npy", 300, 5, 3)
        j = json.loads(self.run_km("info", x, "--json").stdout)
        self.assertEqual((j["format"], j["dtype"], j["rows"], j["cols"], j["non_finite"]), ("npy", "float32", 300, 5, 0))
        self.assertLessEqual(j["min"], j["mean"])
        self.assertLessEqual(j["mean"], j["max"])
        t = json.loads(self.run_km("info", "--targets", "--json").stdout)
        self.assertIn("reference", t["targets"])
        self.assertEqual(t["targets"], self.run_km("info", "--targets").stdout.split())

    def test_non_utf8_output_path_gives_parsable_json(self):
        x = self.make_data("x.npy", 500, 4, 3)
        out = b"c\xff\xfe.npy"  # a valid file name, not valid UTF-8
        p = subprocess.run([FLASHKM, "fit", x, "-k", "3", "-o", out, "--json", "-q"], capture_output=True,
                           cwd=self.dir, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        j = json.loads(p.stdout.decode("utf-8"))  # strict: the output is valid UTF-8
        self.assertEqual(j["outputs"]["centroids"], "c\ufffd\ufffd.npy")
        self.assertIn(b"not valid UTF-8", p.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.dir.encode(), out)))
        # The report's embedded data parses too.
        p = subprocess.run([FLASHKM, "fit", x, "-k", "3", "-o", "c.npy", "--report", b"r\xff.html", "-q"],
                           capture_output=True, cwd=self.dir, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)


class Distributed(Base):
    """`flashkm fit --distributed` under mpirun: the single-process answer, faults stop the job."""

    def mpirun(self, np, *args, timeout=300):
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(np), "-x", "OMP_NUM_THREADS=1",
               FLASHKM, *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.dir)

    def test_one_to_four_ranks_give_the_single_process_result(self):
        x = self.make_data("x.npy", 30011, 24, 12, seed=8, offset=20.0)
        common = ["fit", x, "-k", "12", "--init", "random", "--seed", "5", "--json", "-q", "--threads", "1"]
        one = json.loads(self.run_km(*common, "-o", "c0.npy", "--labels", "l0.npy").stdout)
        with open(self.path("l0.npy"), "rb") as f:
            labels = f.read()
        _, _, c0 = read_npy(self.path("c0.npy"))
        for np in (1, 2, 3, 4):
            p = self.mpirun(np, *common, "--distributed", "-o", "c%d.npy" % np, "--labels", "l%d.npy" % np)
            self.assertEqual(p.returncode, 0, p.stderr)
            j = json.loads(p.stdout)  # only rank 0 prints
            self.assertEqual(j["ranks"], np)
            self.assertEqual(j["n_iter"], one["n_iter"])
            self.assertAlmostEqual(j["inertia"], one["inertia"], delta=1e-10 * one["inertia"])
            with open(self.path("l%d.npy" % np), "rb") as f:
                self.assertEqual(f.read(), labels, "labels with %d ranks" % np)
            _, _, c = read_npy(self.path("c%d.npy" % np))
            for a, b in zip(c, c0):
                self.assertAlmostEqual(a, b, delta=1e-5 * (1 + abs(b)))
        self.assert_no_temporaries()

    def test_streamed_shards(self):
        x = self.make_data("x.npy", 150000, 256, 8, seed=2)
        common = ["fit", x, "-k", "8", "--init", "random", "--max-iter", "5", "--json", "-q", "--threads", "1"]
        self.run_km(*common, "-o", "c0.npy", "--labels", "l0.npy")
        p = self.mpirun(2, *common, "--distributed", "--memory-limit", "40M", "-o", "c2.npy", "--labels", "l2.npy")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(json.loads(p.stdout)["streamed"])
        with open(self.path("l0.npy"), "rb") as f, open(self.path("l2.npy"), "rb") as g:
            self.assertEqual(f.read(), g.read())

    def test_a_rank_that_cannot_read_its_rows_stops_the_job(self):
        # The record dimension changes in the last quarter of the file: only the last rank's
        # rows hit it.
        good = fvecs_bytes([[float(i % 7), float(i % 5), 1.0] for i in range(400)])
        bad = good + fvecs_bytes([[1.0, 2.0]]) + fvecs_bytes([[1.0, 2.0, 3.0, 4.0]])
        self.write("x.fvecs", bad)
        p = self.mpirun(4, "fit", "x.fvecs", "-k", "3", "--distributed", "-o", "out.npy", timeout=120)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("x.fvecs", p.stderr)
        self.assertFalse(os.path.exists(self.path("out.npy")))
        self.assert_no_temporaries()

    def test_a_rank_that_cannot_open_the_file_stops_the_job(self):
        # MPMD: rank 1 is given a path that does not exist on "its node".
        x = self.make_data("x.npy", 1000, 4, 2)
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "1", FLASHKM, "fit", x, "-k", "2",
               "--distributed", "-o", "out.npy", ":", "-np", "1", FLASHKM, "fit", self.path("missing.npy"), "-k", "2",
               "--distributed", "-o", "out.npy"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=self.dir)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("rank 1", p.stderr)
        self.assertIn("missing.npy", p.stderr)
        self.assertFalse(os.path.exists(self.path("out.npy")))

    def test_usage_errors_keep_their_exit_code(self):
        x = self.make_data("x.npy", 1000, 4, 2)
        p = self.mpirun(2, "fit", x, "--distributed", "-o", "out.npy", timeout=120)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("-k is required", p.stderr)
        self.assertEqual(p.stderr.count("-k is required"), 1, "printed by rank 0 only")

    def test_a_rank_that_dies_stops_the_job(self):
        x = self.make_data("x.npy", 100000, 16, 1, seed=3)
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "3", "-x", "OMP_NUM_THREADS=1", FLASHKM,
               "fit", x, "-k", "300", "--init", "random", "--tol", "0", "--max-iter", "100000", "--distributed",
               "-o", "out.npy"]
        proc = subprocess.Popen(cmd, cwd=self.dir, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                                start_new_session=True)
        try:
            line = ""
            while "iter" not in line:
                line = proc.stderr.readline()
                self.assertTrue(line, "the job ended before iterating")
            ranks = subprocess.run(["pgrep", "-f", "-P", str(proc.pid), "flashkm"], capture_output=True,
                                   text=True).stdout.split()
            self.assertEqual(len(ranks), 3, "rank processes: %s" % ranks)
            os.kill(int(ranks[-1]), signal.SIGKILL)
            rc = proc.wait(timeout=60)  # never a hang
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        self.assertNotEqual(rc, 0)
        self.assertFalse(os.path.exists(self.path("out.npy")))
        self.assert_no_temporaries()


if __name__ == "__main__":
    argv = [sys.argv[0]]
    it = iter(sys.argv[1:])
    for a in it:
        if a == "--flashkm":
            FLASHKM = os.path.abspath(next(it))
        elif a == "--make-data":
            MAKE_DATA = os.path.abspath(next(it))
        elif a == "--sanitized":
            SANITIZED = True
        elif a == "--mpirun":
            MPIRUN = next(it)
        else:
            argv.append(a)
    if not FLASHKM or not MAKE_DATA:
        sys.exit("usage: test_cli.py --flashkm PATH --make-data PATH [unittest args]")
    unittest.main(argv=argv, verbosity=2)
