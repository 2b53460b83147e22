#!/usr/bin/env python3
"""How the domain experts' cascade routes, from a run of scripts/expert-cross-validation.sh.

For each scored set (WikiTables' held-out dev folds, GitTables cv_3 beside each of the five
fold models, T2D's held-out folds for CPA and for CTA) and each domain expert, it prints, as
Markdown:

- the share of the tables the expert opens on when it opens below P (the cascade as shipped),
  overall and by kind of table (`eval --json`'s `routing`, summed over the folds; a table is
  entity, mixed or numeric, and also wide when it has 8 columns or more);
- the reads it saves against every expert open (an expert open on every table reads each once);
- what that costs: micro-F1 opening below P minus every expert open, with `colswarm compare`'s
  95% paired interval (pooled over the folds; GitTables: the mean of the five fold models'
  differences and their range, since all five are scored on the same tables).

The swarm's state specialists are left out: they change no answer, and the shipped model keeps
them closed.

Usage: scripts/routing-report.py RUN_DIR [P] [--bin PATH] [--state-specialists A,B,C]
  RUN_DIR: the script's $OUT (its eval JSON files and predictions/); P: the OPEN_BELOW value to
  report (default 0.95). Writes nothing; prints the tables.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

KINDS = ("entity", "mixed", "numeric", "wide")
# The sets the cross-validation script scores, with their number of folds and whether each fold
# is scored on its own held-out tables (pooled) or all on the same tables (GitTables).
SETS = (
    ("wikitables", "WikiTables dev (five folds)", True),
    ("gittables", "GitTables cv_3 (five fold models)", False),
    ("t2d-cpa", "T2D CPA (five folds)", True),
    ("t2d-cta", "T2D CTA (five folds)", True),
)


class ReportError(Exception):
    pass


def load(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ReportError(f"{path}: missing (did scripts/expert-cross-validation.sh finish?)")
    except json.JSONDecodeError as e:
        raise ReportError(f"{path}: not JSON ({e})")


def expert_routing(report: dict, path: Path, state: set[str]) -> dict:
    """The routing entries of the domain experts: every entry but the swarm's state specialists."""
    try:
        entries = report["routing"]["specialists"]
    except (KeyError, TypeError):
        raise ReportError(f"{path}: no `routing.specialists` (an eval --json report?)")
    return {e["name"]: e for e in entries if e["name"] not in state}


def add_counts(total: dict, entry: dict) -> None:
    for scope, counts in [("overall", entry["overall"])] + list(entry["by_kind"].items()):
        t = total.setdefault(scope, [0, 0])
        t[0] += counts["opened"]
        t[1] += counts["tables"]


def compare(binary: str, a: Path, b: Path) -> dict:
    try:
        out = subprocess.run(
            [binary, "compare", str(a), str(b), "--json"], capture_output=True, text=True
        )
    except FileNotFoundError:
        raise ReportError(
            f"no colswarm binary at {binary}: `cargo build --release -p colswarm-cli`, or pass --bin"
        )
    if out.returncode != 0:
        raise ReportError(f"colswarm compare {a} {b}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def concat(paths: list[Path], out: Path) -> Path:
    with open(out, "w", encoding="utf-8") as w:
        for p in paths:
            if not p.is_file():
                raise ReportError(f"{p}: missing")
            w.write(p.read_text(encoding="utf-8"))
    return out


def share(counts) -> str:
    opened, tables = counts
    return f"{opened / tables:.0%} of {tables}" if tables else "—"


def report(run: Path, p: str, binary: str, state: set[str]) -> str:
    lines = [
        f"Opening below {p} against every expert open; run {run}. A table is entity, mixed or"
        " numeric, and wide besides when it has 8 columns or more.",
        "",
        "| set | expert | opens on | " + " | ".join(KINDS) + " | reads saved | the set's micro-F1, cascade − all open (95%) |",
        "|---|---|---|" + "---|" * len(KINDS) + "---|---|",
    ]
    pred = run / "predictions"
    for key, title, pooled in SETS:
        counts: dict[str, dict] = {}
        for k in range(5):
            path = run / f"{key}-fold{k}-below-{p}.json"
            for name, entry in expert_routing(load(path), path, state).items():
                add_counts(counts.setdefault(name, {}), entry)
        if pooled:
            a = concat([pred / f"{key}-fold{k}-below-{p}.jsonl" for k in range(5)],
                       pred / f"{key}-below-{p}.jsonl")
            b = concat([pred / f"{key}-fold{k}-all.jsonl" for k in range(5)], pred / f"{key}-all.jsonl")
            c = compare(binary, a, b)
            cost = f"{c['difference']:+.3f} ({c['ci_low']:+.3f} to {c['ci_high']:+.3f})"
        else:
            diffs = [
                compare(binary, pred / f"{key}-fold{k}-below-{p}.jsonl", pred / f"{key}-fold{k}-all.jsonl")
                for k in range(5)
            ]
            d = [c["difference"] for c in diffs]
            above = sum(c["ci_low"] > 0 for c in diffs)
            below = sum(c["ci_high"] < 0 for c in diffs)
            cost = (f"mean {sum(d) / len(d):+.3f} ({min(d):+.3f} to {max(d):+.3f} per model; "
                    f"{below} interval(s) below zero, {above} above)")
        for name, total in sorted(counts.items()):
            opened, tables = total["overall"]
            kinds = " | ".join(share(total.get(kind, [0, 0])) for kind in KINDS)
            saved = 1 - opened / tables if tables else 0.0
            lines.append(f"| {title} | `{name}` | {share(total['overall'])} | {kinds} | {saved:.0%} | {cost} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("p", nargs="?", default="0.95")
    parser.add_argument("--bin", default="target/release/colswarm")
    parser.add_argument(
        "--state-specialists",
        default="wikitables,gittables,t2d",
        help="the swarm's state specialists, left out (default: the shipped swarm's)",
    )
    args = parser.parse_args()
    try:
        print(report(args.run, args.p, args.bin, set(args.state_specialists.split(","))))
    except ReportError as e:
        print(f"routing-report: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
