#!/usr/bin/env python3
"""The logit-mix weights θ that `scripts/expert-routing-study.sh`'s `mix-0` arm learned.

Each run trained the mix of one fold model from the identity (θ = 0) on one half of its
held-out fold, the router kept at the confidence rule. For every (namespace, expert) this prints
θ per run, the median over all runs (what a model of the same recipe stores), and, per fold K,
the median over the runs of the *other* folds (what `--nested DIR` stores in a copy of fold K's
model to score fold K with weights its own tables did not choose).

Usage:
  scripts/mix_weights.py STUDY_OUT [STUDY_OUT ...]            # the weights, and their medians
  scripts/mix_weights.py --nested DIR --fold-model PATTERN STUDY_OUT ...
      # writes DIR/foldK: a copy of PATTERN (with {k}) calibrated with the other folds' medians
  scripts/mix_weights.py --average DIR --fold-model PATTERN --folds 0,1,2,3,4
      # writes DIR/foldK: a copy of PATTERN with every mix weight at 1, the plain average
      # (the protocol's fold models store the mix they learned)
"""

import argparse
import json
import re
import shlex
import shutil
import statistics
import struct
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

RUN = re.compile(r"^mix-0-seed(\d+)-fold(\d+)-")


def tensors(path):
    """The f32 tensors of a safetensors file, by name: (shape, values)."""
    data = path.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if meta["dtype"] != "F32":
            sys.exit(f"{path}: tensor {name} is {meta['dtype']}, expected F32")
        start, end = meta["data_offsets"]
        out[name] = (meta["shape"], struct.unpack(f"<{(end - start) // 4}f", body[start:end]))
    return out


def mixed_namespaces(model):
    """The namespaces the mix numbers, in its order: the shared CTA head's, then CPA's."""
    labels = json.loads((model / "labels.json").read_text())
    cta = []
    for namespace in labels["cta"]:
        if namespace.get("head"):
            break
        cta.append(f"cta:{namespace['name']}")
    return cta + [f"cpa:{n['name']}" for n in labels["cpa"]]


def experts(model):
    """The experts' names, in router order (a v3 manifest, or a v2 directory's experts.json)."""
    manifest = json.loads((model / "swarm.json").read_text())
    if manifest["format"] == "colswarm-swarm-v2":
        return [e["name"] for e in json.loads((model / "experts.json").read_text())["experts"]]
    return [s["name"] for s in manifest["specialists"] if s["contributes"] == "answers"]


def routing_mix(model):
    """{"EXPERT@NAMESPACE": a} of MODEL's stored routing, every pair (empty without one): the
    effective weight a = max(θ, 0) the mix uses."""
    model = Path(model)
    routing = model / "expert_routing.safetensors"
    if not routing.exists():
        return {}
    weights = [v for k, v in tensors(routing).items() if k.startswith("mix")]
    if len(weights) != 1:
        sys.exit(f"{routing}: expected one mix tensor")
    (rows, cols), values = weights[0]
    names, namespaces = experts(model), mixed_namespaces(model)
    if (rows, cols) != (len(namespaces), len(names)):
        sys.exit(f"{routing}: mix {rows}×{cols}, {len(namespaces)} namespaces × {len(names)} experts")
    return {f"{expert}@{namespace}": max(values[n * cols + e], 0.0)
            for n, namespace in enumerate(namespaces) for e, expert in enumerate(names)}


def learned(study_dirs):
    """{(expert, namespace): [(fold, seed, θ)]} over every mix-0 run of the studies."""
    found = defaultdict(list)
    for study in study_dirs:
        for run in sorted((Path(study) / "runs").iterdir()):
            match = RUN.match(run.name)
            model = run / "model"
            if not match or not (model / "expert_routing.safetensors").exists():
                continue
            seed, fold = int(match[1]), int(match[2])
            for pair, theta in routing_mix(model).items():
                expert, namespace = pair.split("@")
                found[(expert, namespace)].append((fold, seed, theta))
    return found


def trained_only(found):
    """Drop the (expert, namespace) pairs training never moved (the expert knows no label there)."""
    return {key: runs for key, runs in found.items() if any(theta != 0.0 for _, _, theta in runs)}


def calibrated(args, model, flags, out):
    """OUT: a copy of MODEL calibrated with FLAGS (at least one)."""
    command = [*shlex.split(args.bin), "calibrate", "--model", model, *flags, "--out", str(out)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def average(args):
    """DIR/foldK: each fold model with every mix weight at 1."""
    for k in args.folds.split(","):
        out = args.average / f"fold{k}"
        if out.exists():
            continue
        model = args.fold_model.replace("{k}", k)
        flags = [a for pair in sorted(routing_mix(model)) for a in ("--mix-weight", f"{pair}=1")]
        if flags:
            calibrated(args, model, flags, out)
        else:
            shutil.copytree(model, out, symlinks=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("studies", nargs="*")
    parser.add_argument("--nested", type=Path)
    parser.add_argument("--average", type=Path)
    parser.add_argument("--folds", default="0,1,2,3,4")
    parser.add_argument("--fold-model")
    parser.add_argument("--bin", default="target/release/colswarm",
                        help="the colswarm command (may hold arguments, e.g. `cargo run --`)")
    args = parser.parse_args()
    if args.average is not None:
        if not args.fold_model:
            sys.exit("--average needs --fold-model")
        average(args)
        return
    found = trained_only(learned(args.studies))
    if not found:
        sys.exit("no mix-0 run found")
    for (expert, namespace), runs in sorted(found.items()):
        thetas = [theta for _, _, theta in runs]
        print(f"{expert}@{namespace}: median {statistics.median(thetas):.2f} over {len(thetas)} runs "
              f"(from {min(thetas):.2f} to {max(thetas):.2f})")
    if args.nested is None:
        return
    if not args.fold_model:
        sys.exit("--nested needs --fold-model")
    folds = sorted({fold for runs in found.values() for fold, _, _ in runs})
    for k in folds:
        out = args.nested / f"fold{k}"
        if out.exists():
            continue
        flags = []
        for (expert, namespace), runs in sorted(found.items()):
            theta = statistics.median(t for fold, _, t in runs if fold != k)
            flags += ["--mix-weight", f"{expert}@{namespace}={theta:.3f}"]
        calibrated(args, args.fold_model.replace("{k}", str(k)), flags, out)
        print(f"fold {k}: {' '.join(flags[1::2])}", file=sys.stderr)


if __name__ == "__main__":
    main()
