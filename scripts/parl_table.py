#!/usr/bin/env python3
"""Summarises PARL runs' log.jsonl files: per window of steps, the mean reward terms,
activation rate per specialist and training F1 (r_perf); and every dev evaluation.

Usage: python3 scripts/parl_table.py RUN_DIR [RUN_DIR ...] [--window 25]
"""
import json
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
window = 25
if "--window" in sys.argv:
    window = int(sys.argv[sys.argv.index("--window") + 1])
    args.remove(str(window))

for run in args:
    steps, devs = [], []
    with open(f"{run}/log.jsonl") as log:
        for line in log:
            entry = json.loads(line)
            (steps if entry["event"] == "step" else devs).append(entry)
    print(f"\n### {run}\n")
    print("| steps | λ1 | λ2 | reward | r_perf (train F1) | r_parallel | r_finish | activation per specialist | gate entropy |")
    print("|---|---|---|---|---|---|---|---|---|")
    for start in range(0, len(steps), window):
        chunk = steps[start:start + window]
        mean = lambda key: sum(e[key] for e in chunk) / len(chunk)
        rates = [sum(e["activation_rate"][i] for e in chunk) / len(chunk)
                 for i in range(len(chunk[0]["activation_rate"]))]
        print(f"| {chunk[0]['step']}–{chunk[-1]['step']} | {mean('lambda_parallel'):.2f} | "
              f"{mean('lambda_finish'):.2f} | {mean('reward'):.3f} | {mean('r_perf'):.3f} | "
              f"{mean('r_parallel'):.3f} | {mean('r_finish'):.3f} | "
              f"{' / '.join(f'{r:.2f}' for r in rates)} | {mean('gate_entropy'):.2f} |")
    if devs:
        print("\n| step | dev score (mean micro-F1) | dev activation rate | per set |")
        print("|---|---|---|---|")
        for d in devs:
            per = ", ".join(f"{x['namespace']} {x['task']} {x['micro_f1']:.3f}" for x in d["dev"])
            print(f"| {d['step']} | {d['dev_score']:.3f} | {d['activation_rate']:.2f} | {per} |")
