#!/usr/bin/env python3
"""Plots of `pmindex lab --json FILE` (doc/primitives.md).

usage: scripts/lab_plot.py LAB.json OUT_DIR [EXPERIMENTS]

EXPERIMENTS: comma-separated (e.g. E4,E8,profile) to draw only those; all by default.

Writes one PNG per experiment present: e1_search.png, e3_iterate.png, e4_insert.png,
e5_split.png, e8_erase.png, e9_balance.png, e10_merge.png (latency and bytes modified over
node size, per organisation and position), e2_traverse.png, e6_move.png, e7_merge_level.png,
and profile.png: the analogue of the paper's Figure 15, each organisation's score per
micro-operation at 1 KiB nodes (best = 1: the best organisation's figure over this one's),
also printed as a Markdown table.
"""
import json
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(rows, key_fn, x="node_bytes", y="ns_per_op"):
    out = defaultdict(list)
    for r in rows:
        if r[y] is None or r[y] < 0:
            continue
        out[key_fn(r)].append((r[x], r[y]))
    return {k: sorted(v) for k, v in out.items()}


def node_plot(rows, exp, title, path, with_bytes=True):
    rows = [r for r in rows if r["exp"] == exp]
    if not rows:
        return
    positions = sorted({r["position"] for r in rows}) or [""]
    ncols = len(positions)
    nrows = 2 if with_bytes else 1
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.5 * ncols, 3.5 * nrows), squeeze=False)
    for c, pos in enumerate(positions):
        sub = [r for r in rows if r["position"] == pos]
        label = lambda r: f'{r["org"]} {r["variant"]} {r["param"]}'.strip()
        for name, pts in series(sub, label).items():
            axes[0][c].plot(*zip(*pts), marker="o", label=name)
        axes[0][c].set_title(f"{title} {pos}".strip())
        axes[0][c].set_xscale("log", base=2)
        axes[0][c].set_ylabel("ns / op")
        if with_bytes:
            for name, pts in series(sub, label, y="bytes_modified").items():
                axes[1][c].plot(*zip(*pts), marker="o", label=name)
            axes[1][c].set_xscale("log", base=2)
            axes[1][c].set_ylabel("bytes modified / op")
            axes[1][c].set_xlabel("node bytes")
    axes[0][-1].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def lsm_plot(rows, exp, title, path):
    rows = [r for r in rows if r["exp"] == exp]
    if not rows:
        return
    params = sorted({r["param"] for r in rows})
    fig, axes = plt.subplots(1, len(params), figsize=(6 * len(params), 4), squeeze=False)
    for c, p in enumerate(params):
        sub = [r for r in rows if r["param"] == p]
        for name, pts in series(sub, lambda r: f'{r["org"]} {r["variant"]}').items():
            axes[0][c].plot(*zip(*pts), marker="o", label=name)
        axes[0][c].set_xscale("log", base=2)
        axes[0][c].set_yscale("log")
        axes[0][c].set_xlabel("run bytes" if exp != "E2" else "node bytes")
        axes[0][c].set_ylabel("ns / op")
        axes[0][c].set_title(f"{title} {p}".strip())
        axes[0][c].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def traverse_plot(rows, path):
    rows = [r for r in rows if r["exp"] == "E2"]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for where in sorted({r["org"] for r in rows}):
        pts = sorted((int(r["param"].split("=")[1]), r["ns_per_op"]) for r in rows if r["org"] == where)
        ax.plot(*zip(*pts), marker="o", label=where)
    ax.set_xlabel("depth")
    ax.set_ylabel("ns / traversal")
    ax.set_title("E2 tree traversal (256 B nodes)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


PROFILE_BYTES = 1024
DEFAULT_SEARCH = {"sorted": "binary", "unsorted": "linear", "unsorted+bitmap": "linear+bit",
                  "indirection": "binary-ind", "hashing": "hash-probe", "bitmap": "linear+bit"}


def profile(rows):
    """{org: {axis: lower-is-better figure}} at PROFILE_BYTES, key in the middle."""
    out = defaultdict(dict)
    for r in rows:
        if r["node_bytes"] != PROFILE_BYTES:
            continue
        org, exp = r["org"], r["exp"]
        if exp == "E1" and r["position"] == "middle" and DEFAULT_SEARCH.get(org) == r["variant"]:
            out[org]["search " + r["param"]] = r["ns_per_op"]
        elif exp in ("E4", "E8") and r["position"] == "middle":
            name = "insert" if exp == "E4" else "erase"
            out[org][name] = r["ns_per_op"]
            out[org][name + " bytes"] = r["bytes_modified"]
        elif exp == "E3" and r["param"] == "uncached" and r["variant"] != "slots":
            out[org]["iterate"] = r["ns_per_op"]
        elif exp == "E5":
            out[org]["split"] = min(out[org].get("split", 1e300), r["ns_per_op"])
        elif exp == "E9":
            out[org]["balance"] = r["ns_per_op"]
        elif exp == "E10":
            out[org]["merge"] = r["ns_per_op"]
    return out


def profile_plot(rows, path):
    prof = profile(rows)
    if not prof:
        return
    orgs = [o for o in DEFAULT_SEARCH if o in prof]
    axes = [a for a in next(iter(prof.values())) if all(a in prof[o] for o in orgs)]
    best = {a: min(prof[o][a] for o in orgs) for a in axes}
    score = [[(best[a] / prof[o][a]) if prof[o][a] > 0 else 1.0 for a in axes] for o in orgs]
    fig, ax = plt.subplots(figsize=(1.0 * len(axes) + 2, 0.5 * len(orgs) + 1.5))
    im = ax.imshow(score, cmap="RdYlGn", vmin=0, vmax=1)
    ax.set_xticks(range(len(axes)), axes, rotation=45, ha="right")
    ax.set_yticks(range(len(orgs)), orgs)
    for i in range(len(orgs)):
        for j in range(len(axes)):
            ax.text(j, i, f"{score[i][j]:.2f}", ha="center", va="center", fontsize=7)
    ax.set_title(f"profile at {PROFILE_BYTES} B nodes (1 = best)")
    fig.colorbar(im)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print("| organisation | " + " | ".join(axes) + " |")
    print("|---" * (len(axes) + 1) + "|")
    for o, row in zip(orgs, score):
        print(f"| {o} | " + " | ".join(f"{x:.2f}" for x in row) + " |")


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        rows = json.load(f)["lab"]
    out = sys.argv[2]
    only = set(sys.argv[3].upper().split(",")) if len(sys.argv) == 4 else None
    want = lambda name: only is None or name.upper() in only
    os.makedirs(out, exist_ok=True)
    j = lambda name: os.path.join(out, name)
    node = [("E1", "E1 search", "e1_search.png", False), ("E3", "E3 iterate", "e3_iterate.png", False),
            ("E4", "E4 insert", "e4_insert.png", True), ("E5", "E5 split", "e5_split.png", True),
            ("E8", "E8 erase", "e8_erase.png", True), ("E9", "E9 balance", "e9_balance.png", True),
            ("E10", "E10 merge", "e10_merge.png", True)]
    for exp, title, png, with_bytes in node:
        if want(exp):
            node_plot(rows, exp, title, j(png), with_bytes=with_bytes)
    if want("E2"):
        traverse_plot(rows, j("e2_traverse.png"))
    if want("E6"):
        lsm_plot(rows, "E6", "E6 move C0 to L0", j("e6_move.png"))
    if want("E7"):
        lsm_plot(rows, "E7", "E7 merge level", j("e7_merge_level.png"))
    if want("profile"):
        profile_plot(rows, j("profile.png"))


if __name__ == "__main__":
    main()
