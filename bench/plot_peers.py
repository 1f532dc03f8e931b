#!/usr/bin/env python3
"""Plot and summarise bench/results/peers.json (from bench/run_peers.sh).

Writes docs/benchmarks.png (seconds per iteration by peer and shape, log scale) and prints a
markdown table: flashkm against the fastest *exact* peer on every shape (peers that subsample or
start elsewhere are shown but not counted as exact: faiss_default subsamples to 256 points per
centroid; SuperKMeans cannot start from the shared centroids)."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# The harness names a contender by its module.
NOT_EXACT = {"faiss_default": "subsamples", "peer_adapters": "own init"}


def per_iter(r):
    m = r.get("per_iter_marginal_s")
    return m if m is not None and m > 0 else r["per_iter_total_s"]


def label(peer):
    return {"peer_adapters": "superkmeans (exact settings)", "sklearnex.cluster": "sklearnex"}.get(peer, peer)


def main(peers_path="bench/results/peers.json", png="docs/benchmarks.png"):
    P = json.load(open(peers_path))
    by_ds = {}
    for r in P["results"]:
        by_ds.setdefault(r["dataset"], []).append(r)
    names = sorted({label(r["peer"]) for r in P["results"]})
    fig, ax = plt.subplots(figsize=(12, 5))
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        xs, ys = [], []
        for j, rows in enumerate(by_ds.values()):
            for r in rows:
                if label(r["peer"]) == name and r.get("status") == "ok":
                    xs.append(j + i * width)
                    ys.append(per_iter(r))
        ax.bar(xs, ys, width, label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(by_ds))])
    ax.set_xticklabels([f"N={rows[0]['N']}\nD={rows[0]['D']} K={rows[0]['K']}\n{ds.split('_')[0]}"
                        for ds, rows in by_ds.items()], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("seconds per Lloyd iteration (log)")
    ax.set_title(f"k-means peers, {P['meta']['threads']} threads, same data and initial centroids")
    ax.legend(fontsize=8, ncol=4)
    fig.tight_layout()
    fig.savefig(png, dpi=110)

    print("| data set | N | D | K | flashkm s/iter | fastest exact peer | its s/iter | speed-up | "
          "flashkm inertia vs sklearn |")
    print("|---|---|---|---|---|---|---|---|---|")
    for ds, rows in by_ds.items():
        ok = [r for r in rows if r.get("status") == "ok"]
        fk = next((r for r in ok if r["peer"] == "flashkm"), None)
        exact = [r for r in ok if r["peer"] != "flashkm" and r["peer"] not in NOT_EXACT]
        sk = next((r for r in ok if r["peer"] == "sklearn_lloyd"), None)
        if not fk or not exact:
            continue
        best = min(exact, key=per_iter)
        rel = (fk["inertia_ref"] / sk["inertia_ref"] - 1) if sk else float("nan")
        print(f"| {ds.split('_')[0]} | {fk['N']} | {fk['D']} | {fk['K']} | {per_iter(fk):.4f} | "
              f"{label(best['peer'])} | {per_iter(best):.4f} | {per_iter(best) / per_iter(fk):.2f}× | "
              f"{rel:+.1e} |")


if __name__ == "__main__":
    main(*sys.argv[1:])
