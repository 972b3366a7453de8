#!/usr/bin/python3
"""Thread-scaling tables and plots from a `pmindex bench --json` file run at several thread
counts (scripts/scaling.sh runs one).

    /usr/bin/python3 scripts/scaling.py results.json OUT_DIR

Writes into OUT_DIR:
  scaling.md              one table per workload: Mops/s per index and thread count, and the
                          speedup of the largest count over the smallest
  scaling-<workload>.png  Mops/s against threads, one line per index, each index's ideal
                          (its smallest count's throughput times the thread ratio) dotted

Thread counts above the machine's cores (the JSON's environment) are marked with '*': they
measure threads sharing cores, not scaling.
"""
import json
import os
import sys


def ordered(values):
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def load(path):
    with open(path) as f:
        doc = json.load(f)
    results = [r for r in doc.get("results", []) if r.get("workload") != "recover"]
    return doc.get("environment", {}), results


def table(env, results, workload):
    rows = [r for r in results if r["workload"] == workload]
    threads = sorted({r["threads"] for r in rows})
    cores = env.get("cores") or 0
    by = {(r["index"], r["threads"]): r["mops"] for r in rows}
    head = ["index"] + ["%d%s" % (t, "*" if cores and t > cores else "") for t in threads]
    if len(threads) > 1:
        head.append("%d / %d" % (threads[-1], threads[0]))
    lines = ["### %s (Mops/s)" % workload, "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for index in ordered(r["index"] for r in rows):
        cells = [index]
        for t in threads:
            v = by.get((index, t))
            cells.append("-" if v is None else "%.2f" % v)
        if len(threads) > 1:
            lo, hi = by.get((index, threads[0])), by.get((index, threads[-1]))
            cells.append("%.2fx" % (hi / lo) if lo and hi is not None else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(env, results, workload, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in results if r["workload"] == workload]
    threads = sorted({r["threads"] for r in rows})
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    cmap = plt.get_cmap("tab10")
    for i, index in enumerate(ordered(r["index"] for r in rows)):
        pts = sorted((r["threads"], r["mops"]) for r in rows if r["index"] == index)
        color = cmap(i % 10)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=color, label=index)
        t0, m0 = pts[0]
        ax.plot([p[0] for p in pts], [m0 * p[0] / t0 for p in pts], linestyle=":", color=color)
    cores = env.get("cores") or 0
    if cores and threads and threads[-1] > cores:
        ax.axvline(cores, color="grey", linewidth=0.8)
        ax.text(cores, ax.get_ylim()[1] * 0.95, " cores", color="grey", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(threads)
    ax.set_xticklabels([str(t) for t in threads])
    ax.set_xlabel("threads")
    ax.set_ylabel("Mops/s (dotted: ideal)")
    ax.set_title("%s - %s, %s cores, mode %s" % (workload, env.get("cpu", "?"),
                                                 env.get("cores", "?"), env.get("mode", "?")),
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    env, results = load(sys.argv[1])
    if not results:
        sys.stderr.write("scaling.py: no results in %s\n" % sys.argv[1])
        return 1
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    workloads = ordered(r["workload"] for r in results)
    text = ["# Thread scaling", "",
            "%s, %s cores, mode %s, pool dir %s (%s). '*': more threads than cores." % (
                env.get("cpu", "?"), env.get("cores", "?"), env.get("mode", "?"),
                env.get("pool_dir", "?"), env.get("pool_medium", "?")), ""]
    for w in workloads:
        text.append(table(env, results, w))
        plot(env, results, w, os.path.join(out, "scaling-%s.png" % w))
    with open(os.path.join(out, "scaling.md"), "w") as f:
        f.write("\n".join(text))
    print("wrote %s/scaling.md and %d plots" % (out, len(workloads)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
