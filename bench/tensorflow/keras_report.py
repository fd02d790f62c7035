"""The Keras benchmark's report (bench_keras.py): from the rounds' results,
tables.md (printed too), ratios.csv, ratios.png, summary.csv and
results.csv."""
from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

import rounds as rd
from keras_groups import GROUPS, HOROVOD_GROUP, LOCAL_BATCH, MODELS, N
from keras_ratios import ratios

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # plot.py


def machine():
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} vCPU ({cpu}), Linux {os.uname().release}"


def report(args, out, results, round_log, failed, horovod_skipped, started, start_s, total_s, tf_version):
    """tables.md, ratios.csv, ratios.png, summary.csv and results.csv from
    the rounds' results; 1 when a result was wrong or a group failed."""
    w, units = MODELS[args.model]
    dims = [w] + units
    params = sum(a * b + b for a, b in zip(dims, dims[1:]))
    with open(out / "results.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["group", "case", "rank", "size", "round", "iteration", "warmup", "time_ms"])
        for res in results:
            for i, t in enumerate(res["times_s"]):
                wr.writerow([res["group"], res["case"], res["rank"], res["size"], res["round"], i,
                             int(i < args.warmup), f"{t * 1e3:.3f}"])
    medians = rd.round_medians(results, args.warmup)
    figures = ratios(horovod=horovod_skipped is None, shaped=args.hosts == "netns")
    ratio_lines, ratio_rows = rd.ratio_table(figures, medians, args.rounds)
    with open(out / "ratios.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["section", "short", "ratio", "round", "value", "goal"])
        wr.writerows(ratio_rows)
    with open(out / "summary.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["section", "ratio", "median", "min", "max", "spread_pct", "rounds", "goal", "verdict"])
        for ratio in figures:
            s = rd.summarize(rd.per_round(ratio, medians, args.rounds))
            wr.writerow([ratio.section, ratio.name] + (["", "", "", "", 0] if s is None else
                        [f"{s.median:.4f}", f"{s.low:.4f}", f"{s.high:.4f}", f"{s.spread * 100:.1f}", s.n]) +
                        [rd.goal_text(ratio.goal), rd.verdict(ratio.goal, s).strip("*")])
    hv_tf = next((r.get("tf_version") for r in results if r["group"] == HOROVOD_GROUP), None)
    lines = [f"Command: `{args.command}` ({started}; {params:,} float32 parameters in 8 gradients, "
             f"{params * 4 / 1e6:.1f} MB; N = {N} processes, local batch {LOCAL_BATCH}; {args.rounds} rounds of "
             f"{args.warmup} warm-up + {args.iters} timed iterations per case; rank 0's times"
             f"{'; each rank on an emulated host, links shaped (bench/network/topo.sh)' if args.hosts == 'netns' else ''}"
             f"{f'; MWMS bytes_per_pack {args.bytes_per_pack}' if args.bytes_per_pack else ''})",
             "",
             f"Machine: {machine()}. TensorFlow {tf_version} (Ringmaster, MWMS), "
             f"{hv_tf or '2.13.1'} (Horovod 0.28.1). Start-up of the kept groups {start_s:.0f} s, whole run "
             f"{total_s:.0f} s.",
             "",
             "Each ratio is taken per round (rK) between groups that ran back to back in that round; median "
             "and min – max over the rounds, ± = half the range over the median. Goals are judged on the "
             "median. Peer / Ringmaster > 1: Ringmaster is faster; a cost (ours / reference) <= 1.1 is within "
             "10 %."]
    lines += ratio_lines
    if horovod_skipped:
        lines += ["", f"horovod: not measured: {horovod_skipped}"]
    lines += ["", "**Rounds** (load: the 1-minute load average at the start and end of the round)", "",
              "| round | order | seconds | load | per group |", "| --- | --- | ---: | --- | --- |"]
    for k, order, l0, l1, secs, per_group in round_log:
        lines.append(f"| r{k} | {', '.join(order)} | {secs:.0f} | {l0:.1f} -> {l1:.1f} | {'; '.join(per_group)} |")
    case_keys = []
    for g in GROUPS:
        for c in GROUPS[g][2]:
            if any(k[0] == g and k[1] == c for k in medians):
                case_keys.append((c, (g, c)))
    lines += ["", "**Each case's median per-iteration time (ms), per round**", ""]
    lines += rd.case_table(case_keys, medians, args.rounds)
    bad = sorted({f"{r['group']}/{r['case']} rank {r['rank']} round {r['round']}" for r in results
                  if r.get("correct") is False})
    if bad:
        lines += ["", "WRONG RESULTS: " + ", ".join(bad)]
    if failed:
        lines += ["", "FAILED groups (see the logs in the out dir): " +
                  "; ".join(f"{g}: {why}" for g, why in failed.items())]
    text = "\n".join(lines) + "\n"
    (out / "tables.md").write_text(text)
    print(text)
    try:
        from plot import plot_csv
        plot_csv(out / "ratios.csv", x="short", y="value", out=out / "ratios.png", group="round",
                 facet="section", series_label="round {round}", hline=1,
                 title=f"Keras model, N = {N}: each ratio per round", xlabel="", ylabel="ratio")
    except Exception as e:  # the tables stand without the plot
        print(f"bench_keras: no plot ({type(e).__name__}: {e})", file=sys.stderr)
    print(f"bench_keras: wrote {out}/tables.md, ratios.csv, ratios.png, summary.csv, results.csv", file=sys.stderr)
    return 1 if bad or failed else 0
