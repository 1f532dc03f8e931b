"""Sparse k-means per Lloyd iteration on a real TF-IDF matrix: flashkm, scikit-learn and
scikit-learn-intelex side by side in one process (issue 13, "Performance").

The matrix is built from text on this machine: Debian's documentation (/usr/share/doc, plain and
.gz files; HTML tags stripped), the English manual pages (/usr/share/man/man*/, gzipped roff with
the markup stripped crudely), /usr/share/common-licenses and the system Python's standard library
sources (/usr/lib/python3.*/**/*.py). Each file's text is cut into documents of `--lines`
consecutive non-blank lines (default 40; the last, shorter piece is kept); a document with fewer
than 10 words is dropped and exact duplicate documents are kept once. scikit-learn's
TfidfVectorizer (min_df=2, max_df=0.5, sublinear_tf=True, otherwise its defaults: lowercase,
tokens of 2+ word characters, l2-normalised rows) turns them into a float32 CSR matrix. It is
cached in build/sparse-tfidf/ (scipy.sparse.save_npz) with a JSON of how it was built (file and
document counts, the matrix's SHA-256); a rerun reads the cache and skips the text pass. The file
list depends on the machine's installed packages, so the hash identifies the matrix, not the
recipe.

The timing: K = 100 centres chosen as distinct rows by a fixed seed, the same float32 array
passed as `init` to all three; 2 threads each (n_threads=2 for flashkm, OMP_NUM_THREADS=2 and
threadpoolctl for scikit-learn; oneDAL sees the 2 cores of the machine). Each implementation runs
with max_iter=a and max_iter=b (tol=0); the time per iteration is (T_b - T_a) / (n_iter_b -
n_iter_a) using the reported n_iter_, the three implementations alternating, median of
`--repeats` rounds. The same run measures a streaming read of a 512 MB array (numpy sum, 1 and 2
threads) to read the per-iteration time against one read of X, and checks that the labels and
inertia agree after the same number of iterations from the same init (every pair, after a and
after b iterations, the first round's fits).
scikit-learn-intelex's log (SKLEARNEX_VERBOSE=INFO) says whether it ran oneDAL or fell back to
scikit-learn on sparse input.

    build/venv/bin/python bench/bench_sparse_tfidf.py [--repeats 3] [--iters 4,12] [--json out.json]
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("SKLEARNEX_VERBOSE", "INFO")

import argparse  # noqa: E402
import glob  # noqa: E402
import gzip  # noqa: E402
import hashlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, "build", "sparse-tfidf")
BINARY_EXT = {".png", ".gif", ".jpg", ".jpeg", ".svg", ".ico", ".pdf", ".ps", ".eps", ".woff",
              ".woff2", ".ttf", ".otf", ".zip", ".xz", ".bz2", ".tar", ".jar", ".pyc", ".mo", ".db",
              ".bin", ".so", ".a", ".o", ".wasm", ".dvi"}

# --- the text pass -------------------------------------------------------------------------------

_ROFF_ESC = re.compile(r"\\(?:[fFsnk*gmM](?:\([^\s]{2}|\[[^\]]*\]|[-+]?\d+|.)|\([^\s]{2}|\[[^\]]*\]|.)")
_TAG = re.compile(r"<[^>]{0,2000}>")


def strip_roff(text):
    """Crude roff to text: comments dropped, a request line keeps its arguments, escapes become
    spaces (\\- becomes '-')."""
    out = []
    for line in text.splitlines():
        if line.startswith(('.\\"', "'\\\"", '.\\#')) or line.strip() in (".", "'"):
            continue
        if line[:1] in (".", "'"):
            parts = line[1:].split(None, 1)
            line = parts[1] if len(parts) == 2 else ""
            line = line.replace('"', " ")
        line = line.replace("\\-", "-")
        out.append(_ROFF_ESC.sub(" ", line))
    return "\n".join(out)


def read_text(path):
    """The text of a plain or gzipped file, or None for what looks binary."""
    base = path[:-3] if path.endswith(".gz") else path
    if os.path.splitext(base)[1].lower() in BINARY_EXT:
        return None
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                raw = f.read(64 << 20)
        else:
            with open(path, "rb") as f:
                raw = f.read(64 << 20)
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    if b"\0" in raw[:8192]:
        return None
    text = raw.decode("utf-8", errors="replace")
    if os.path.splitext(base)[1].lower() in (".html", ".htm", ".xhtml", ".xml"):
        text = _TAG.sub(" ", text)
    return text


def sources():
    """(kind, path) of every text file used, in a fixed (sorted) order."""
    def files(pattern):
        return sorted(p for p in glob.glob(pattern, recursive=True)
                      if os.path.isfile(p) and not os.path.islink(p))
    yield from (("doc", p) for p in files("/usr/share/doc/**/*"))
    yield from (("man", p) for p in files("/usr/share/man/man*/**/*"))
    yield from (("license", p) for p in files("/usr/share/common-licenses/*"))
    for lib in sorted(glob.glob("/usr/lib/python3.*")):
        yield from (("python", p) for p in files(lib + "/**/*.py") if "/site-packages/" not in p
                    and "/dist-packages/" not in p)


def documents(lines_per_doc):
    """Documents of `lines_per_doc` non-blank lines from every source, duplicates dropped, and
    counts of what was read."""
    seen = set()
    docs = []
    counts = {}
    for kind, path in sources():
        text = read_text(path)
        c = counts.setdefault(kind, {"files": 0, "files_used": 0, "documents": 0, "bytes": 0})
        c["files"] += 1
        if text is None:
            continue
        if kind == "man":
            text = strip_roff(text)
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if not lines:
            continue
        c["files_used"] += 1
        for i in range(0, len(lines), lines_per_doc):
            doc = "\n".join(lines[i:i + lines_per_doc])
            if len(doc.split()) < 10:
                continue
            h = hashlib.blake2b(doc.encode("utf-8", "replace"), digest_size=16).digest()
            if h in seen:
                counts.setdefault("duplicates_dropped", 0)
                counts["duplicates_dropped"] += 1
                continue
            seen.add(h)
            docs.append(doc)
            c["documents"] += 1
            c["bytes"] += len(doc)
    return docs, counts


def matrix_hash(X):
    h = hashlib.sha256()
    h.update(np.asarray(X.shape, np.int64).tobytes())
    for a in (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def tfidf_matrix(lines_per_doc, min_df, max_df, rebuild=False):
    """The cached matrix and how it was built; builds it (minutes) when there is no cache."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    key = f"lines{lines_per_doc}-mindf{min_df}-maxdf{max_df}"
    npz, meta_path = (os.path.join(CACHE, f"tfidf-{key}{ext}") for ext in (".npz", ".json"))
    if not rebuild and os.path.exists(npz) and os.path.exists(meta_path):
        X = sp.load_npz(npz).tocsr()
        with open(meta_path) as f:
            meta = json.load(f)
        if matrix_hash(X) != meta["sha256"]:
            raise SystemExit(f"{npz} does not match its recorded hash; rerun with --rebuild")
        meta["from_cache"] = True
        return X, meta
    t = time.perf_counter()
    docs, counts = documents(lines_per_doc)
    t_text = time.perf_counter() - t
    vec = TfidfVectorizer(min_df=min_df, max_df=max_df, sublinear_tf=True, dtype=np.float32)
    t = time.perf_counter()
    X = vec.fit_transform(docs).tocsr()
    t_vec = time.perf_counter() - t
    X.sort_indices()
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int64 if X.nnz >= 2**31 else np.int32)
    os.makedirs(CACHE, exist_ok=True)
    sp.save_npz(npz, X, compressed=False)
    meta = {
        "recipe": {
            "sources": ["/usr/share/doc/** (plain and .gz; HTML tags stripped; binary skipped)",
                        "/usr/share/man/man*/** (gzipped roff, markup stripped crudely)",
                        "/usr/share/common-licenses/*",
                        "/usr/lib/python3.*/**/*.py (not site-/dist-packages)"],
            "document": f"{lines_per_doc} consecutive non-blank lines of one file (the last piece "
                        "shorter); fewer than 10 words dropped; exact duplicates kept once",
            "vectorizer": f"TfidfVectorizer(min_df={min_df}, max_df={max_df}, sublinear_tf=True, "
                          "dtype=float32), otherwise defaults",
        },
        "counts": counts,
        "documents": len(docs),
        "shape": list(X.shape), "nnz": int(X.nnz),
        "sha256": matrix_hash(X),
        "text_pass_seconds": round(t_text, 1), "vectorizer_seconds": round(t_vec, 1),
        "built": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "host": platform.node(),
        "from_cache": False,
    }
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    return X, meta


# --- the machine's ceiling -----------------------------------------------------------------------

def read_rate(threads, mb=512, repeats=5):
    """GB/s of numpy sums over a `mb` MB float32 array, split among `threads` Python threads
    (numpy releases the GIL in the reduction); best of `repeats`."""
    a = np.ones(mb * (1 << 20) // 4, np.float32)
    parts = np.array_split(a, threads)
    best = float("inf")
    for _ in range(repeats):
        ts = [threading.Thread(target=np.sum, args=(p,)) for p in parts]
        t = time.perf_counter()
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        best = min(best, time.perf_counter() - t)
    return a.nbytes / best / 1e9


# --- the implementations -------------------------------------------------------------------------

class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        msg = re.sub(r" at 0x[0-9a-f]+", "", record.getMessage())
        self.lines.append(f"{record.levelname}: {msg}")


def make_runners(k, C0):
    import flashkm
    from sklearn.cluster import KMeans as SkKMeans
    from threadpoolctl import threadpool_limits

    def run_flashkm(X, iters):
        return flashkm.KMeans(k, init=C0, n_init=1, max_iter=iters, tol=0, n_threads=2).fit(X)

    # The same fit with the bounded assignment off: every distance computed.
    def run_flashkm_noprune(X, iters):
        return flashkm.KMeans(k, init=C0, n_init=1, max_iter=iters, tol=0, n_threads=2, prune=False).fit(X)

    def run_sklearn(X, iters):
        with threadpool_limits(limits=2):
            return SkKMeans(k, init=C0, n_init=1, max_iter=iters, tol=0, algorithm="lloyd").fit(X)

    runners = {"flashkm": run_flashkm, "flashkm-noprune": run_flashkm_noprune, "sklearn": run_sklearn}
    try:
        from sklearnex.cluster import KMeans as ExKMeans

        def run_sklearnex(X, iters):
            with threadpool_limits(limits=2):
                return ExKMeans(k, init=C0, n_init=1, max_iter=iters, tol=0,
                                algorithm="lloyd").fit(X)
        runners["sklearnex"] = run_sklearnex
    except ImportError as e:
        print("scikit-learn-intelex not available:", e, file=sys.stderr)
    return runners


def versions():
    out = {"python": platform.python_version()}
    for name in ("numpy", "scipy", "sklearn", "sklearnex", "flashkm", "threadpoolctl"):
        try:
            mod = __import__(name)
            out[name] = getattr(mod, "__version__", "?")
        except ImportError:
            pass
    try:
        from importlib.metadata import version
        out["scikit-learn-intelex"] = version("scikit-learn-intelex")
    except Exception:
        pass
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=40, help="non-blank lines per document")
    ap.add_argument("--min-df", type=int, default=2)
    ap.add_argument("--max-df", type=float, default=0.5)
    ap.add_argument("--rebuild", action="store_true", help="ignore the cached matrix")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--iters", default="4,12", help="a,b: max_iter of the two runs")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="flashkm,flashkm-noprune,sklearn,sklearnex")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    t = time.perf_counter()
    X, meta = tfidf_matrix(args.lines, args.min_df, args.max_df, args.rebuild)
    n, d = X.shape
    x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    print(f"X: {n} x {d}, nnz {X.nnz} (density {X.nnz / (n * d):.3e}, {X.nnz / n:.1f} per row), "
          f"{x_bytes / 1e6:.1f} MB, sha256 {meta['sha256'][:16]}..., "
          f"{'from cache' if meta['from_cache'] else 'built'} in {time.perf_counter() - t:.1f} s",
          flush=True)
    if args.build_only:
        print(json.dumps(meta, indent=1))
        return

    # The same centres for everyone: K distinct non-empty rows chosen by a fixed seed.
    rng = np.random.default_rng(args.seed)
    nonempty = np.flatnonzero(np.diff(X.indptr) > 0)
    rows, seen = [], set()
    for i in rng.permutation(nonempty):
        r = X[i]
        key = (r.indices.tobytes(), r.data.tobytes())
        if key not in seen:
            seen.add(key)
            rows.append(i)
        if len(rows) == args.k:
            break
    rows = np.array(rows)
    C0 = np.ascontiguousarray(X[rows].toarray(), dtype=np.float32)

    uptime_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    ceiling = {"read_GBps_1_thread": read_rate(1), "read_GBps_2_threads": read_rate(2)}
    print(f"streaming read of 512 MB: {ceiling['read_GBps_1_thread']:.1f} GB/s (1 thread), "
          f"{ceiling['read_GBps_2_threads']:.1f} GB/s (2 threads)", flush=True)

    a, b = (int(v) for v in args.iters.split(","))
    runners = make_runners(args.k, C0)
    names = [nm for nm in args.only.split(",") if nm in runners]

    cap = _Capture()
    for logger_name in ("sklearnex", "onedal", "daal4py"):
        lg = logging.getLogger(logger_name)
        lg.addHandler(cap)
        lg.setLevel(logging.DEBUG)

    raw = {nm: [] for nm in names}
    fits = {}
    for rep in range(args.repeats):
        order = names if rep % 2 == 0 else names[::-1]
        for nm in order:
            rec = {}
            for iters in (a, b):
                cap.lines.clear()
                t = time.perf_counter()
                km = runners[nm](X, iters)
                rec[iters] = (time.perf_counter() - t, int(km.n_iter_))
                if nm.startswith("flashkm"):
                    # Fraction of the N x K distances each iteration computed (pruning).
                    rec["distance_fraction"] = ([h["distances"] / (n * args.k) for h in km.history_])
                if nm == "sklearnex":
                    rec.setdefault("log", list(cap.lines))
                if rep == 0:
                    fits[(nm, iters)] = km
            (ta, ia), (tb, ib) = rec[a], rec[b]
            per = (tb - ta) / (ib - ia) if ib > ia else float("nan")
            raw[nm].append({"T_a": ta, "n_iter_a": ia, "T_b": tb, "n_iter_b": ib,
                            "seconds_per_iteration": per, **({"log": rec["log"]} if "log" in rec else {}),
                            **({"distance_fraction_at_b": rec["distance_fraction"]}
                               if "distance_fraction" in rec else {})})
            print(f"round {rep + 1} {nm:10s} T({ia})={ta:7.2f}s T({ib})={tb:7.2f}s "
                  f"-> {per:.4f} s/iter", flush=True)
    uptime_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()

    med = {nm: statistics.median(r["seconds_per_iteration"] for r in raw[nm]) for nm in names}
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": "build/venv/bin/python bench/bench_sparse_tfidf.py " + " ".join(sys.argv[1:]),
        "matrix": {k_: meta[k_] for k_ in ("recipe", "counts", "documents", "sha256", "built",
                                           "text_pass_seconds", "vectorizer_seconds")},
        "shape": [n, d], "nnz": int(X.nnz), "density": X.nnz / (n * d),
        "nnz_per_row": X.nnz / n, "dtype": str(X.dtype),
        "x_bytes": int(x_bytes), "k": args.k, "threads": 2,
        "init": f"{args.k} distinct non-empty rows, numpy default_rng({args.seed}).permutation",
        "iters": [a, b], "repeats": args.repeats,
        "seconds_per_iteration": med,
        "iteration_over_one_read_of_X": {nm: med[nm] / (x_bytes / (ceiling["read_GBps_2_threads"] * 1e9))
                                         for nm in names},
        "ceiling": ceiling,
        "uptime": [uptime_before, uptime_after],
        "nproc": os.cpu_count(),
        "versions": versions(),
        "raw": raw,
    }
    if "flashkm" in med:
        import flashkm
        out["flashkm_target"] = flashkm.default_target()
        for nm in names:
            if nm != "flashkm":
                out[f"speedup_vs_{nm}"] = med[nm] / med["flashkm"]
    # Agreement of every pair after the same number of iterations from the same init (the first
    # round's fits, at max_iter=a and max_iter=b).
    agree = {}
    for iters in (a, b):
        for i, p in enumerate(names):
            for q in names[i + 1:]:
                f, o = fits[(p, iters)], fits[(q, iters)]
                agree[f"{p}_vs_{q}_max_iter_{iters}"] = {
                    "n_iter": [int(f.n_iter_), int(o.n_iter_)],
                    "equal_labels_fraction": float(np.mean(f.labels_ == o.labels_)),
                    "inertia": [float(f.inertia_), float(o.inertia_)],
                    "inertia_relative_difference": float(abs(f.inertia_ - o.inertia_) / abs(o.inertia_)),
                    "max_centre_difference": float(np.max(np.abs(f.cluster_centers_ - o.cluster_centers_))),
                }
    out["agreement"] = agree
    if "sklearnex" in raw:
        logs = [ln for r in raw["sklearnex"] for ln in r.get("log", [])]
        out["sklearnex_log_sample"] = sorted(set(logs))[:20]
        out["sklearnex_ran"] = ("oneDAL" if any("running accelerated" in ln for ln in logs)
                                and not any("fallback" in ln.lower() for ln in logs)
                                else "fallback to scikit-learn" if any("fallback" in ln.lower() for ln in logs)
                                else "unknown (see sklearnex_log_sample)")
    print(json.dumps({k_: v for k_, v in out.items() if k_ != "raw"}, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
