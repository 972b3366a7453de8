#!/usr/bin/env python3
"""Medians and ratios of a scripts/peers.sh results directory, as markdown tables.

Each round-R.txt holds the drivers' result lines ("LABEL MODE n=N cpu_ns_per_op load=..
lookup=.. absent=.. insert=.. scan=.. | found=.. check=.. loadavg=a,b,c") and '#' lines with the
load averages before each pair. A cell reads "peer / pmindex (x)": the medians over the rounds of
CPU ns per operation, and x the median over the rounds of peer / pmindex within a round
(pmindex's throughput over the peer's: above 1, pmindex is faster). FAST_FAIR is set
against the pmindex B+tree with the lowest median in each phase, as doc/performance.md does.

Usage: summarize.py [--spread] RESULTS_DIR   (--spread: the lowest and highest per-round
                                              ratio in each cell instead)
"""
import glob
import os
import re
import statistics
import sys

PHASES = ["load", "lookup", "absent", "insert", "scan"]
BTREES = ["rntree", "rntree-ds", "fptree", "nvtree", "wbtree", "wbtree-so"]
# peer label -> pmindex index name
PAIRS = [
    ("icpp-rntree", "rntree"),
    ("icpp-rntree-ds", "rntree-ds"),
    ("icpp-fptree", "fptree"),
    ("icpp-nvtree", "nvtree"),
    ("icpp-wbtree", "wbtree"),
    ("icpp-wbtree8", "wbtree-so"),
    ("peer-fastfair", None),
    ("peer-wort", "wort"),
    ("peer-woart", "woart"),
    ("peer-part", "pftree"),
    ("peer-libart", "art"),
    ("peer-cceh", "cceh"),
    ("peer-pclht", "pclht"),
    ("peer-levelhash", "levelhash"),
    ("peer-dash", "dash"),
    ("peer-roart", "roart"),
]
LINE = re.compile(r"^(\S+) (\S+) n=(\d+) cpu_ns_per_op (.*?) \| (.*)$")


def parse(path):
    """{(label, mode): {phase: ns}} and the 1-minute load averages seen, of one round."""
    results, loads = {}, []
    for line in open(path):
        if line.startswith("#"):
            m = re.search(r"loadavg ([\d.]+)", line)
            if m:
                loads.append(float(m.group(1)))
            continue
        m = LINE.match(line.strip())
        if not m:
            continue
        label, mode, _, cells, tail = m.groups()
        values = {}
        for cell in cells.split():
            name, _, value = cell.partition("=")
            if value != "-":
                values[name] = float(value)
        if "check=" in tail:
            check = re.search(r"check=(\d+)/(\d+)", tail)
            if check and check.group(1) != check.group(2):
                print(f"warning: {path}: {label} {mode}: check {check.group(0)}", file=sys.stderr)
        results[(label, mode)] = values
    return results, loads


def fmt(v):
    return f"{v:.0f}"


SPREAD = False


def main():
    global SPREAD
    args = sys.argv[1:]
    if args and args[0] == "--spread":
        SPREAD = True
        args = args[1:]
    if len(args) != 1:
        sys.exit(__doc__)
    sys.argv[1:] = args
    rounds, loads = [], []
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "round-*.txt"))):
        r, l = parse(path)
        rounds.append(r)
        loads += l
    if not rounds:
        sys.exit(f"no round-*.txt in {sys.argv[1]}")

    def median_of(label, mode, phase):
        vals = [r[(label, mode)][phase] for r in rounds
                if (label, mode) in r and phase in r[(label, mode)]]
        return statistics.median(vals) if vals else None

    def cell(peer, ours_label, mode, phase):
        p = median_of(peer, mode, phase)
        o = median_of(ours_label, mode, phase)
        if p is None and o is None:
            return "-"
        ratios = [r[(peer, mode)][phase] / r[(ours_label, mode)][phase] for r in rounds
                  if phase in r.get((peer, mode), {}) and phase in r.get((ours_label, mode), {})]
        ps = fmt(p) if p is not None else "(none)"
        os_ = fmt(o) if o is not None else "(none)"
        if not ratios:
            return f"{ps} / {os_}"
        if SPREAD:
            return f"{min(ratios):.2f}x-{max(ratios):.2f}x"
        return f"{ps} / {os_} ({statistics.median(ratios):.2f}x)"

    print(f"{len(rounds)} rounds; 1-minute load average before the pairs: "
          f"{min(loads):.1f} to {max(loads):.1f} (median {statistics.median(loads):.1f})"
          if loads else f"{len(rounds)} rounds")
    for mode in ["adr", "eadr", "volatile"]:
        rows = []
        for peer, ours in PAIRS:
            if not any((peer, mode) in r for r in rounds):
                continue
            if ours is None:
                cells = []
                for phase in PHASES:
                    best = min((t for t in BTREES if median_of(t, mode, phase) is not None),
                               key=lambda t: median_of(t, mode, phase), default=None)
                    if best is None:
                        cells.append("-")
                    else:
                        cells.append(cell(peer, best, mode, phase) + f" {best}")
                rows.append(f"| best B+tree vs {peer} | " + " | ".join(cells) + " |")
            else:
                cells = [cell(peer, ours, mode, phase) for phase in PHASES]
                rows.append(f"| {ours} vs {peer} | " + " | ".join(cells) + " |")
        if not rows:
            continue
        print(f"\n{mode}:\n")
        print("| pmindex vs peer | load | lookup | absent lookup | insert | scan of 100 |")
        print("|---|---|---|---|---|---|")
        print("\n".join(rows))


if __name__ == "__main__":
    main()
