#!/usr/bin/env python3
"""Prints the median of every criterion benchmark under target/criterion as CSV
(group, function, parameter, median seconds, throughput in G/s when the bench declares one).

    python3 benches/peers/criterion_medians.py [target/criterion]
"""

import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
print("group,function,parameter,median_s,throughput_G_per_s")
for est in sorted(root.glob("**/new/estimates.json")):
    bench = json.loads((est.parent / "benchmark.json").read_text())
    median_s = json.loads(est.read_text())["median"]["point_estimate"] / 1e9
    thr = bench.get("throughput") or {}
    elements = thr.get("Elements")
    rate = f"{elements / median_s / 1e9:.2f}" if elements else ""
    print(f"{bench['group_id']},{bench.get('function_id') or ''},{bench.get('value_str') or ''},{median_s:.6f},{rate}")
