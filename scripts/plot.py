#!/usr/bin/python3
"""Draws PNG plots from a `pmindex bench --json` file.

    /usr/bin/python3 scripts/plot.py results.json OUT_DIR

Writes into OUT_DIR:
  throughput.png   Mops/s per workload and index (the smallest thread count run)
  persistence.png  flushes, fences and media writes per operation, per workload and index
  latency.png      p50 / p99 / p99.9 latency per workload and index (log scale)
  threads.png      Mops/s against threads, per workload (only when several counts were run)
  recovery.png     recovery seconds per index (only when `recover` was run)

Uses Debian's python3-matplotlib, which belongs to /usr/bin/python3.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def ordered(values):
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def grouped_bars(ax, workloads, indexes, value, ylabel, log=False):
    """One group of bars per workload, one bar per index; missing results leave a gap."""
    width = 0.8 / max(1, len(indexes))
    cmap = plt.get_cmap("tab20")
    for i, index in enumerate(indexes):
        xs, ys = [], []
        for w, workload in enumerate(workloads):
            v = value(index, workload)
            if v is not None:
                xs.append(w - 0.4 + width * (i + 0.5))
                ys.append(v)
        ax.bar(xs, ys, width, label=index, color=cmap(i % 20))
    ax.set_xticks(range(len(workloads)))
    ax.set_xticklabels(workloads)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    env = doc.get("environment", {})
    results = [r for r in doc.get("results", []) if r.get("workload") != "recover"]
    if not results:
        sys.stderr.write("plot.py: no results to plot in %s\n" % sys.argv[1])
        return 1
    subtitle = "%s, %s cores, mode %s, pool dir %s (%s)" % (
        env.get("cpu", "?"), env.get("cores", "?"), env.get("mode", "?"),
        env.get("pool_dir", "?"), env.get("pool_medium", "?"))
    threads = sorted({r["threads"] for r in results})
    base = threads[0]
    indexes = ordered(r["index"] for r in results)
    workloads = ordered(r["workload"] for r in results)
    by_key = {(r["index"], r["workload"], r["threads"]): r for r in results}

    def field(index, workload, get, t=base):
        r = by_key.get((index, workload, t))
        return None if r is None else get(r)

    ncol = min(4, max(1, len(indexes)))
    # Throughput.
    fig, ax = plt.subplots(figsize=(max(8, 1.2 * len(workloads) * max(1, len(indexes)) / 3), 5))
    grouped_bars(ax, workloads, indexes,
                 lambda i, w: field(i, w, lambda r: r["mops"]), "Mops/s")
    ax.set_title("Throughput, %d thread%s\n%s" % (base, "" if base == 1 else "s", subtitle),
                 fontsize=9)
    ax.legend(fontsize=7, ncol=ncol)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "throughput.png"), dpi=120)
    plt.close(fig)

    # Persistence instructions and media writes per operation.
    fig, axes = plt.subplots(3, 1, figsize=(max(8, len(workloads) * 1.6), 10), sharex=True)
    for ax, (key, label) in zip(axes, [("flushes", "cache-line flushes / op"),
                                       ("fences", "fences / op"),
                                       ("media_writes", "256 B media writes / op")]):
        grouped_bars(ax, workloads, indexes,
                     lambda i, w, key=key: field(i, w, lambda r: r["per_op"][key]), label)
    axes[0].set_title("Persistence cost per operation (XPLine media model; pool-less baselines "
                      "are not measured)\n%s" % subtitle,
                      fontsize=9)
    axes[0].legend(fontsize=7, ncol=ncol)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "persistence.png"), dpi=120)
    plt.close(fig)

    # Latency percentiles: one panel per workload.
    n = len(workloads)
    cols = min(2, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 3.6 * rows), squeeze=False)
    for k, workload in enumerate(workloads):
        ax = axes[k // cols][k % cols]
        pcts = [("p50", "p50"), ("p99", "p99"), ("p999", "p99.9")]
        grouped_bars(ax, [label for _, label in pcts], indexes,
                     lambda i, p, workload=workload: field(
                         i, workload, lambda r: max(1, r["latency_ns"][dict(
                             (lab, key) for key, lab in pcts)[p]])),
                     "ns", log=True)
        ax.set_title("workload %s latency" % workload, fontsize=9)
        if k == 0:
            ax.legend(fontsize=6, ncol=ncol)
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle("Latency percentiles, %d thread%s - %s" % (base, "" if base == 1 else "s",
                                                             subtitle), fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "latency.png"), dpi=120)
    plt.close(fig)

    # Throughput against threads.
    if len(threads) > 1:
        fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 3.6 * rows), squeeze=False)
        for k, workload in enumerate(workloads):
            ax = axes[k // cols][k % cols]
            for i, index in enumerate(indexes):
                pts = [(t, by_key[(index, workload, t)]["mops"]) for t in threads
                       if (index, workload, t) in by_key]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=index,
                            color=plt.get_cmap("tab20")(i % 20))
            ax.set_xticks(threads)
            ax.set_xlabel("threads")
            ax.set_ylabel("Mops/s")
            ax.set_title("workload %s" % workload, fontsize=9)
            ax.grid(alpha=0.3)
            if k == 0:
                ax.legend(fontsize=6, ncol=ncol)
        for k in range(n, rows * cols):
            axes[k // cols][k % cols].axis("off")
        fig.suptitle("Throughput vs threads - %s" % subtitle, fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "threads.png"), dpi=120)
        plt.close(fig)

    recovery = [r for r in doc.get("results", [])
                if r.get("workload") == "recover" and r.get("recovery_seconds") is not None]
    if recovery:
        fig, ax = plt.subplots(figsize=(8, 4))
        names = ["%s (%dT)" % (r["index"], r["threads"]) for r in recovery]
        ax.bar(names, [r["recovery_seconds"] * 1e3 for r in recovery])
        ax.set_ylabel("recovery ms")
        ax.set_title("Recovery (close + OpenIndex)\n%s" % subtitle, fontsize=9)
        plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "recovery.png"), dpi=120)
        plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
