#!/usr/bin/python3
"""Tables and plots of the write-amplification study (Woo et al., IEEE Access 2021) from the
`pmindex bench --json` files scripts/reproduce/write-amplification.sh writes.

    /usr/bin/python3 scripts/reproduce/wa_tables.py OUT_DIR JSON...

Writes OUT_DIR/write-amplification.md (per thread count: WPQ inserts per insert, media writes
per insert, media writes per WPQ insert beside the paper's Table 2, Mops/s) and
OUT_DIR/wa-<workload>.png (WPQ inserts and media writes per insert, one bar pair per index).
Indexes of the study that pmindex does not have yet appear as named empty rows. Then, from
OUT_DIR/opt-<row>-<base|variant>.json where present, the section IV optimizations: base
against variant on workload A, beside the paper's Fig. 10 changes.
"""
import json
import os
import sys

# The study's indexes in its order (hash, tree, trie), pmindex's name or None.
STUDY = [("P-CLHT", "pclht"), ("Level hashing", "levelhash"), ("CCEH", "cceh"),
         ("FAST&FAIR", "fastfair"), ("P-Masstree", None), ("P-BwTree", None),
         ("P-ART", "part"), ("P-HOT", None)]
# The paper's Table 2: media writes per WPQ insert, workloads Load, A, B.
PAPER_TABLE2 = {"P-CLHT": (2.49, 2.71, 2.60), "Level hashing": (2.16, 3.12, 3.60),
                "CCEH": (2.39, 2.21, 2.46), "FAST&FAIR": (1.83, 1.89, 1.87),
                "P-Masstree": (2.97, 3.01, 3.06), "P-BwTree": (2.21, 2.15, 1.85),
                "P-ART": (2.25, 2.54, 2.52), "P-HOT": (1.87, 1.97, 2.17)}
WORKLOADS = [("load", "Load"), ("a-insert", "A"), ("b-insert", "B")]
# The section IV optimizations: row, what, index, base -> variant parameters, accounting, and
# the paper's Fig. 10 changes (WPQ inserts, media writes, throughput; None: not given).
OPTIMIZATIONS = [
    ("fc", "cache-flush coalescing", "P-CLHT", "default -> `flush=coalesce`",
     "shared", (-30.8, None, +31.8)),
    ("ve", "early eviction of the lock word (sparse table)", "P-CLHT",
     "`flush=coalesce` -> `flush=coalesce unlock=flush`", "shared, unflushed counted",
     (+5.7, -41.6, +23.7)),
    ("fcve", "both (sparse table)", "P-CLHT", "default -> `flush=coalesce unlock=flush`",
     "shared, unflushed counted", (None, None, None)),
    ("ve-dense", "early eviction of the lock word (dense table)", "P-CLHT",
     "`flush=coalesce` -> `flush=coalesce unlock=flush`", "shared, unflushed counted",
     (+5.7, -41.6, +23.7)),
    ("xs", "XPLine-aware sizing (256-byte buckets)", "P-CLHT",
     "default -> `bucket_bytes=256`", "shared", (-10.4, -15.1, None)),
    ("xs-ff", "XPLine-aware sizing (256-byte nodes)", "FAST&FAIR",
     "default -> `node_bytes=256`", "shared", (-10.5, -7.6, -7.1)),
    ("all", "all three (dense table)", "P-CLHT",
     "default -> `flush=coalesce unlock=flush bucket_bytes=256`", "shared, unflushed counted",
     (None, -49.5, None)),
]
# Optimizations without a pmindex variant, and why (doc/write-amplification.md).
NOT_BUILT = [
    ("removal of bloat", "Level hashing", "(-31.3, -11.2, +6.9)",
     "no variant: pmindex's slots never straddle a line and each persist is one line"),
    ("removal of bloat", "FAST&FAIR", "(-27.4, -2.0, +27.5)",
     "no variant: pmindex's header is one whole line, no pair split across lines"),
]


def fmt(v, digits=2):
    return "-" if v is None else ("%.*f" % (digits, v))


def load_results(paths):
    env, results = {}, []
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        env = doc.get("environment", env)
        results += doc.get("results", [])
    return env, results


def table(results, threads):
    by = {(r["index"], r["workload"]): r for r in results if r["threads"] == threads}
    head = ["index"]
    for _, w in WORKLOADS:
        head += ["%s WPQ/ins" % w, "%s media/ins" % w, "%s media/WPQ" % w, "paper"]
    head += ["C Mops/s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, name in STUDY:
        cells = ["%s (`%s`)" % (label, name) if name else label + " (not in pmindex yet)"]
        for i, (w, _) in enumerate(WORKLOADS):
            r = by.get((name, w)) if name else None
            pi = (r or {}).get("per_insert") or {}
            paper = PAPER_TABLE2.get(label)
            cells += [fmt(pi.get("wpq")), fmt(pi.get("media_units")),
                      fmt((r or {}).get("media_units_per_wpq")),
                      fmt(paper[i]) if paper else "-"]
        c = by.get((name, "c")) if name else None
        cells.append(fmt(c["mops"], 3) if c else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def pct(base, variant):
    if base is None or variant is None or base == 0:
        return None
    return 100.0 * (variant - base) / base


def fmt_pct(v):
    return "-" if v is None else "%+.1f%%" % v


def opt_result(out, row, side):
    path = os.path.join(out, "opt-%s-%s.json" % (row, side))
    if not os.path.exists(path):
        return None
    with open(path) as f:
        doc = json.load(f)
    for r in doc.get("results", []):
        if r["workload"] == "a-insert":
            return r
    return None


def optimizations_table(out):
    head = ["optimization", "index", "base -> variant", "accounting", "WPQ/ins base",
            "variant", "change", "paper", "media/ins base", "variant", "change", "paper",
            "Mops/s change", "paper"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    found = False
    for row, what, label, params, acct, paper in OPTIMIZATIONS:
        b, v = opt_result(out, row, "base"), opt_result(out, row, "variant")
        if b is None or v is None:
            continue
        found = True
        bi, vi = b.get("per_insert") or {}, v.get("per_insert") or {}
        cells = [what, label, params, acct]
        for key, p in (("wpq", paper[0]), ("media_units", paper[1])):
            cells += [fmt(bi.get(key)), fmt(vi.get(key)), fmt_pct(pct(bi.get(key), vi.get(key))),
                      fmt_pct(p)]
        cells += [fmt_pct(pct(b.get("mops"), v.get("mops"))), fmt_pct(paper[2])]
        lines.append("| " + " | ".join(cells) + " |")
    if not found:
        return None
    lines += ["", "Not measured here (paper's WPQ, media, throughput changes in brackets):", ""]
    for what, label, paper, why in NOT_BUILT:
        lines.append("- %s on %s %s: %s" % (what, label, paper, why))
    return "\n".join(lines) + "\n"


def plot(results, threads, workload, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(label, r) for label, name in STUDY for r in results
            if name and r["index"] == name and r["workload"] == workload
            and r["threads"] == threads and r.get("per_insert")]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["per_insert"]["wpq"] or 0 for _, r in rows], 0.4,
           label="WPQ inserts per insert")
    ax.bar([x + 0.2 for x in xs], [r["per_insert"]["media_units"] or 0 for _, r in rows], 0.4,
           label="media writes (64 B) per insert")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([label for label, _ in rows], fontsize=8)
    ax.set_title("workload %s, %d thread(s)" % (workload, threads), fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    out = sys.argv[1]
    env, results = load_results(sys.argv[2:])
    if not results:
        sys.stderr.write("wa_tables.py: no results\n")
        return 1
    os.makedirs(out, exist_ok=True)
    text = ["# Write amplification (Woo et al.) reproduced", "",
            "%s, %s cores, mode %s, media model %s. Per insert: the paper's normalisation "
            "(the workload's WPQ inserts and 64-byte media writes over its inserts). 'paper': "
            "its Table 2, media writes per WPQ insert." % (
                env.get("cpu", "?"), env.get("cores", "?"), env.get("mode", "?"),
                env.get("media_model", "?")), ""]
    for t in sorted({r["threads"] for r in results}):
        text += ["## %d thread%s" % (t, "" if t == 1 else "s"), "", table(results, t)]
        for w, _ in WORKLOADS:
            plot(results, t, w, os.path.join(out, "wa-%s-%dt.png" % (w, t)))
    opt = optimizations_table(out)
    if opt:
        text += ["## Section IV optimizations (workload A, 1 thread)", "",
                 "Base against variant; 'change' is the variant's over the base's. Mops/s "
                 "of the rows with unflushed lines counted carry that instrument's cost "
                 "(a page fault per page written between fences).", "", opt]
    with open(os.path.join(out, "write-amplification.md"), "w") as f:
        f.write("\n".join(text))
    print("wrote %s/write-amplification.md" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
