"""Precision of the silver labelling rules on gold tables, and the choice of thresholds.

    python3 scripts/corpora/evaluate.py --vectors .corpora/glove/glove.6B.50d.txt

GitTables rule (header -> one label of the GitTables DBpedia or Schema.org set): scored on
T2D, whose property files keep each annotated column's header. A T2D column counts as
correct when the silver label's name equals the local name of its gold DBpedia property
(`http://dbpedia.org/ontology/releaseDate` = `releaseDate` = `schema:releaseDate`); it is
in vocabulary when that name is in the label set. T2D's tables (sorted by id) are split by
position: even ones tune the similarity threshold, odd ones report.
The GitTables folds ship without headers, so the header rule cannot be run on them.

WikiTables rule (header -> Freebase type set): the map is learned on the train split; the
threshold and the hierarchy option are chosen on train by two-fold cross-fitting (even/odd
tables), and the map learned on all of train is reported on dev.

Thresholds are chosen by the highest F0.5 (precision weighted over recall) on the tuning
tables. Writes datasets/silver/{precision.json,precision-per-label.tsv,threshold-curve.tsv,
thresholds.json} and prints the tables as Markdown. Stdlib only."""
from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import sys
from collections import Counter
from pathlib import Path

from common import ROOT, SourceError, open_text, t2d_files, t2d_source, write_json
from matcher import HeaderMatcher, HeaderTypeMap, Vectors, normalise

DATA = ROOT / "datasets"
SILVER = DATA / "silver"
GRID = [round(0.40 + 0.05 * i, 2) for i in range(12)] + [1.01]  # 1.01 = exact match only
GT_FILES = {"dbpedia": "gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_{}.csv.gz",
            "schema": "gittables-semtab22/gt-semtab22-schema-property-all/sp_semi1_cv_{}.csv.gz"}


# ------------------------------------------------------------------------------ gold readers
def gittables_labels(label_set: str, data: Path = DATA) -> dict[str, int]:
    """label -> class_id of a GitTables label set, from folds cv_0..cv_3."""
    out: dict[str, int] = {}
    for k in range(4):
        path = data / GT_FILES[label_set].format(k)
        with open_text(path) as f:
            for r in csv.DictReader(f):
                if r["class_id"] != "-1":
                    out[r["class"]] = int(r["class_id"])
    return out


def local_name(uri: str) -> str:
    """'http://dbpedia.org/ontology/Work/runtime' -> 'runtime'."""
    return uri.rstrip("/").rsplit("/", 1)[-1].rsplit("#", 1)[-1]


def t2d_attributes(data: Path = DATA) -> list[tuple[str, int, str, str]]:
    """(table, column, header, gold URI) of every annotated T2D column, key columns included.
    `data` holds t2d-webtables/ (its t2d.tar.gz, or the plain folders)."""
    source = t2d_source(data / "t2d-webtables")
    rows = []
    for name, raw in t2d_files(source, "attributes"):
        p = source / name
        for rec in csv.reader(io.StringIO(raw.decode("utf-8"), newline="")):
            if len(rec) != 4:
                raise SourceError(f"{p}: expected 4 fields, got {len(rec)}")
            uri, header, _key, col = rec
            rows.append((p.stem, int(col), header, uri))
    return rows


def t2d_columns(data: Path = DATA) -> list[tuple[str, int, str, str]]:
    """(table, column, header, gold local name) of every annotated T2D column."""
    return [(t, c, h, local_name(uri)) for t, c, h, uri in t2d_attributes(data)]


def wikitables(split: str, data: Path = DATA) -> list[tuple[str, int, str, tuple[str, ...]]]:
    """(table, column, header, gold types) of a WikiTables split."""
    name = {"train": "train_wikitables_subset_20.csv.gz",
            "dev": "dev_wikitables_subset_2.csv.gz"}[split]
    rows = []
    with open_text(data / "wikitables-turl-subset" / name) as f:
        for r in csv.DictReader(f):
            headers, labels = ast.literal_eval(r["headers"]), ast.literal_eval(r["labels"])
            for i, (h, ts) in enumerate(zip(headers, labels)):
                rows.append((r["table_name"], i, h, tuple(sorted(set(ts)))))
    return rows


def wikitables_meta(data: Path = DATA):
    d = data / "wikitables-turl-subset"
    return (json.loads((d / "wikitables-hierarchy-v2.json").read_text()),
            json.loads((d / "labels_to_text_wikitables-2-cta.json").read_text()))


def halves(rows, key=lambda r: r[0]):
    """Rows split by the position of their table among the sorted table ids."""
    tables = sorted({key(r) for r in rows})
    pos = {t: i for i, t in enumerate(tables)}
    return ([r for r in rows if pos[key(r)] % 2 == 0], [r for r in rows if pos[key(r)] % 2 == 1])


# ------------------------------------------------------------------------------ scoring
def score(pairs):
    """pairs: (predicted set, gold set, rule or None). Pair-level precision and recall over
    labels, coverage over columns; per label: support, predicted, correct."""
    pred = corr = gold = covered = pred_iv = 0
    by_rule = Counter()
    by_rule_ok = Counter()
    per = {}
    for p, g, rule in pairs:
        p, g = set(p), set(g)
        pred += len(p)
        gold += len(g)
        corr += len(p & g)
        covered += bool(p)
        pred_iv += len(p) if g else 0
        if rule:
            by_rule[rule] += len(p)
            by_rule_ok[rule] += len(p & g)
        for lab in p | g:
            s = per.setdefault(lab, [0, 0, 0])
            s[0] += lab in g
            s[1] += lab in p
            s[2] += lab in p and lab in g
    n = len(pairs)
    out = {"columns": n, "labelled": covered, "predicted": pred, "correct": corr,
           "gold_labels": gold,
           "precision": corr / pred if pred else 0.0,
           "precision_in_vocab": corr / pred_iv if pred_iv else 0.0, "recall": corr / gold if gold else 0.0,
           "coverage": covered / n if n else 0.0,
           "by_rule": {r: {"predicted": by_rule[r], "correct": by_rule_ok[r],
                           "precision": by_rule_ok[r] / by_rule[r] if by_rule[r] else 0.0}
                       for r in sorted(by_rule)}}
    return out, per


def f_half(s) -> float:
    p, r = s["precision"], s["recall"]
    return 1.25 * p * r / (0.25 * p + r) if p + r > 0 else 0.0


def t2d_pairs(matcher: HeaderMatcher, rows, threshold: float, strip):
    out = []
    vocab = {strip(lab) for lab in matcher.labels}
    for _t, _c, header, local in rows:
        m = matcher.match(header, threshold)
        p = (strip(m[0]),) if m else ()
        g = (local,) if local in vocab else ()
        out.append((p, g, m[1] if m else None))
    return out


def wt_pairs(tmap: HeaderTypeMap, rows, threshold: float):
    out = []
    for _t, _c, header, gold in rows:
        m = tmap.match(header, threshold)
        out.append((m[0] if m else (), gold, m[1] if m else None))
    return out


def choose(curve) -> float:
    """The threshold with the highest F0.5; ties go to the higher (stricter) threshold."""
    return max(curve, key=lambda c: (round(f_half(c[1]), 6), c[0]))[0]


# ------------------------------------------------------------------------------ main
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--vectors", type=Path, required=True, help="GloVe text file (glove_export.py)")
    ap.add_argument("--out", type=Path, default=SILVER)
    args = ap.parse_args()

    t2d = t2d_columns()
    wt_train, wt_dev = wikitables("train"), wikitables("dev")
    hierarchy, to_text = wikitables_meta()
    label_sets = {k: sorted(gittables_labels(k)) for k in GT_FILES}
    words = set()
    for rows in (t2d, wt_train, wt_dev):
        for r in rows:
            words.update(normalise(r[2]).split())
    for labs in label_sets.values():
        for lab in labs:
            words.update(normalise(lab).split())
    vectors = Vectors.load(args.vectors, words)
    print(f"{len(vectors.table)} of {len(words)} words have vectors", file=sys.stderr)

    results, curves, per_label, chosen = {}, [], [], {}

    def strip(lab):
        return lab.split(":", 1)[1] if lab.startswith("schema:") else lab

    tune, report = halves(t2d)
    for ls, labs in label_sets.items():
        m = HeaderMatcher(labs, vectors, 1.01)
        curve = []
        for t in GRID:
            s_tune, _ = score(t2d_pairs(m, tune, t, strip))
            s_rep, _ = score(t2d_pairs(m, report, t, strip))
            curve.append((t, s_tune))
            curves.append(("gittables-" + ls, "t2d-even (tune)", t, s_tune))
            curves.append(("gittables-" + ls, "t2d-odd (report)", t, s_rep))
        th = choose(curve)
        chosen["gittables-" + ls] = th
        for name, rows in (("t2d-odd (report)", report), ("t2d-all", t2d)):
            s, per = score(t2d_pairs(m, rows, th, strip))
            results[f"gittables-{ls} on {name}"] = s
            per_label += [("gittables-" + ls, name, lab, *v) for lab, v in sorted(per.items())]
            s0, _ = score(t2d_pairs(m, rows, 1.01, strip))
            results[f"gittables-{ls} exact only on {name}"] = s0

    # WikiTables: cross-fit on train for the threshold and the hierarchy option
    a, b = halves(wt_train)
    best = None
    for close in (False, True):
        maps = [(HeaderTypeMap([(r[2], r[3]) for r in x], hierarchy, to_text, vectors, 1.01,
                               close=close), y) for x, y in ((a, b), (b, a))]
        curve = []
        for t in GRID:
            s, _ = score([p for tm, y in maps for p in wt_pairs(tm, y, t)])
            curve.append((t, s))
            curves.append(("wikitables" + ("-closed" if close else ""), "train 2-fold (tune)", t, s))
        th = choose(curve)
        cand = (round(f_half(dict(curve)[th]), 6), not close, th, close)
        if best is None or cand > best:
            best = cand
    th, close = best[2], best[3]
    chosen["wikitables"] = th
    chosen["wikitables_closed_under_hierarchy"] = close
    tm = HeaderTypeMap([(r[2], r[3]) for r in wt_train], hierarchy, to_text, vectors, th, close=close)
    for t in GRID:
        s, _ = score(wt_pairs(tm, wt_dev, t))
        curves.append(("wikitables" + ("-closed" if close else ""), "dev (report)", t, s))
    s, per = score(wt_pairs(tm, wt_dev, th))
    results["wikitables on dev"] = s
    per_label += [("wikitables", "dev", lab, *v) for lab, v in sorted(per.items())]
    results["wikitables exact only on dev"] = score(wt_pairs(tm, wt_dev, 1.01))[0]
    results["wikitables map size"] = len(tm.map)

    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "thresholds.json", {
        "thresholds": chosen, "grid": GRID, "criterion": "highest F0.5 on the tuning tables",
        "vectors": vectors_info(args.vectors)})
    write_json(args.out / "precision.json", rounded(results))
    with open(args.out / "precision-per-label.tsv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["rule", "gold", "label", "support", "predicted", "correct", "precision", "recall"])
        for rule, gold, lab, sup, pred, ok in per_label:
            w.writerow([rule, gold, lab, sup, pred, ok, f"{ok / pred:.4f}" if pred else "",
                        f"{ok / sup:.4f}" if sup else ""])
    with open(args.out / "threshold-curve.tsv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["rule", "gold", "threshold", "precision", "recall", "coverage", "f0.5",
                    "vector_labels", "vector_precision"])
        for rule, gold, t, s in curves:
            v = s["by_rule"].get("vector", {"predicted": 0, "precision": 0.0})
            w.writerow([rule, gold, f"{t:.2f}", f"{s['precision']:.4f}", f"{s['recall']:.4f}",
                        f"{s['coverage']:.4f}", f"{f_half(s):.4f}", v["predicted"],
                        f"{v['precision']:.4f}"])
    print(markdown(results, per_label, curves, chosen))


def vectors_info(path: Path) -> dict:
    meta = path.parent / "glove.json"
    return json.loads(meta.read_text()) if meta.exists() else {"file": path.name}


def rounded(x):
    if isinstance(x, float):
        return round(x, 4)
    if isinstance(x, dict):
        return {k: rounded(v) for k, v in x.items()}
    return x


def markdown(results, per_label, curves, chosen) -> str:
    out = ["| rule on gold | columns | labelled | precision | precision (gold in set) | recall | coverage | exact / vector labels (precision) |",
           "|---|---|---|---|---|---|---|---|"]
    for k, s in results.items():
        if not isinstance(s, dict):
            continue
        br = " / ".join(f"{v['predicted']} ({v['precision']:.3f})" for v in s["by_rule"].values())
        out.append(f"| {k} | {s['columns']} | {s['labelled']} | {s['precision']:.3f} | "
                   f"{s['precision_in_vocab']:.3f} | "
                   f"{s['recall']:.3f} | {s['coverage']:.3f} | {br} |")
    out.append(f"\nchosen: {json.dumps(chosen, sort_keys=True)}\n")
    out.append("| rule | gold | threshold | precision | recall | coverage | F0.5 | vector labels (precision) |")
    out.append("|---|---|---|---|---|---|---|---|")
    for rule, gold, t, s in curves:
        v = s["by_rule"].get("vector", {"predicted": 0, "precision": 0.0})
        out.append(f"| {rule} | {gold} | {t:.2f} | {s['precision']:.3f} | {s['recall']:.3f} | "
                   f"{s['coverage']:.3f} | {f_half(s):.3f} | {v['predicted']} ({v['precision']:.3f}) |")
    for rule, gold in sorted({(r, g) for r, g, *_ in per_label}):
        rows = sorted((x for x in per_label if x[0] == rule and x[1] == gold),
                      key=lambda x: (-x[3], x[2]))[:15]
        out.append(f"\n{rule} on {gold}, top 15 labels by support\n")
        out.append("| label | support | silver | correct | precision | recall |")
        out.append("|---|---|---|---|---|---|")
        for _r, _g, lab, sup, pred, ok in rows:
            p = f"{ok / pred:.3f}" if pred else "–"
            r = f"{ok / sup:.3f}" if sup else "–"
            out.append(f"| {lab} | {sup} | {pred} | {ok} | {p} | {r} |")
    return "\n".join(out)


if __name__ == "__main__":
    try:
        main()
    except SourceError as e:
        sys.exit(f"error: {e}")
