"""The nested protocol's results: each benchmark's tables (the recipe against every peer, paired
intervals, abstention, the folds' choices) and the line that says which commits made them, written
between the `evaluate-recipe` markers of docs/RESULTS.md by `scripts/evaluate_recipe.py`."""

import gzip
import json
import statistics
from collections import defaultdict

from mix_weights import routing_mix
from recipe_folds import ALWAYS, NO_CHANGES, PEERS, PRIOR_PEERS, ROOT, SHIPPED, change_flags, run
from recipe_reader import has_reader, pooled_reader

BEGIN, END = "<!-- evaluate-recipe: begin -->", "<!-- evaluate-recipe: end -->"


def opening(open_below):
    """An `open_below` choice as a number: "always" is below 1, every answer's ceiling."""
    return 1.0 if open_below == ALWAYS else open_below


def opening_text(value):
    return "on every table" if value == 1.0 else f"below {value}"


NAMES = {"t2d": "T2D", "gittables": "GitTables", "wikitables": "WikiTables"}
TITLES = {
    ("wikitables", "cta"): "WikiTables CTA, 66 Freebase types (five folds over dev)",
    ("gittables", "cta"): "GitTables CTA, 101 DBpedia types (cv_0..cv_3)",
    ("t2d", "cta"): "T2D CTA, DBpedia properties (five folds)",
    ("t2d", "cpa"): "T2D CPA, DBpedia properties (five folds)",
}


def pooled(settings, bench, task, folds, system):
    """The folds' prediction files of SYSTEM pooled into one."""
    out = settings.out / bench / f"{task}-{system}.jsonl"
    with open(out, "w") as pool:
        for k in folds:
            name = f"model-{task}.jsonl" if system == "model" else f"peer-{task}-{system}.jsonl"
            pool.write((settings.out / bench / f"fold{k}" / name).read_text())
    return out


def compare(settings, a, b):
    return json.loads(run(settings, "compare", a, b, "--json"))


def keep_predictions(source, kept):
    """The recipe's pooled held-out predictions, kept beside the results file (gzipped, without
    the per-label probabilities, a fixed gzip header) so that any other system's predictions on
    the same folds can be paired against them with `colswarm compare` without a rerun."""
    kept.parent.mkdir(parents=True, exist_ok=True)
    partial = kept.with_suffix(".partial")
    with open(source) as lines, open(partial, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
        for line in lines:
            if line.strip():
                target = json.loads(line)
                target.pop("probabilities", None)
                out.write((json.dumps(target, separators=(",", ":")) + "\n").encode())
    partial.rename(kept)


def kept_name(bench, task):
    return f"{bench}-{task}-recipe.jsonl.gz"


def benchmark_section(settings, bench, task, summaries):
    folds = sorted(summaries)
    systems = list(PEERS) + (list(PRIOR_PEERS) if bench == "t2d" else [])
    without_reader = pooled(settings, bench, task, folds, "model")
    reader = has_reader(summaries, task)
    model_file = pooled_reader(settings.out, bench, task, folds) if reader else without_reader
    keep_predictions(model_file, settings.kept / kept_name(bench, task))
    rows = []
    if reader:
        rows.append(("the recipe without its n-gram reader", compare(settings, model_file, without_reader)))
    for peer in systems:
        rows.append((peer, compare(settings, model_file, pooled(settings, bench, task, folds, peer))))
    best = max(rows[1:] if reader else rows, key=lambda r: r[1]["micro_f1_b"])
    model_f1 = rows[0][1]["micro_f1_a"]
    n_targets = rows[0][1]["n_targets"]
    name = "the recipe with its n-gram reader" if reader else "the recipe"
    lines = [f"### {TITLES[bench, task]}: {n_targets:,} targets", "",
             "| | micro-F1 | model − it (95% interval) |", "|---|---|---|",
             f"| **{name}** | **{model_f1:.3f}** | |"]
    for peer, c in rows:
        mark = " (best peer)" if peer == best[0] else ""
        lines.append(f"| {peer}{mark} | {c['micro_f1_b']:.3f} | "
                     f"{c['difference']:+.3f} ({c['ci_low']:+.3f} to {c['ci_high']:+.3f}) |")
    # Abstention as scored: with the reader where it ran (at the thresholds chosen without it).
    scored = {k: summaries[k]["reader"][task] if reader else summaries[k]["results"][task] for k in folds}
    answered = sum(scored[k].get("answered") or 0 for k in folds)
    correct = sum((scored[k].get("precision") or 0) * (scored[k].get("answered") or 0) for k in folds)
    targets = sum(summaries[k]["results"][task]["targets"] for k in folds)
    chosen = "; ".join(
        f"fold {k}: " + ", ".join(filter(None, [
            f"prior {summaries[k]['weights'][task]}" if bench == "t2d" else None,
            "type view {}, header memory {}".format(*summaries[k]["cpa_priors"])
            if task == "cpa" and summaries[k].get("cpa_priors") else None,
            subject_text(summaries[k]["subject_margin"]) if "subject_margin" in summaries[k] else None,
            "no expert" if summaries[k]["open_below"] is None else f"experts open {opening_text(opening(summaries[k]['open_below']))}",
            f"threshold {scored[k]['threshold']:.2f}" if scored[k].get("threshold") is not None else None,
        ])) for k in folds)
    lines += ["", stored_settings(bench, task, summaries, folds)]
    if reader:
        shares = "; ".join(f"fold {k}: {summaries[k]['reader'][task]['share']}" for k in folds)
        lines += ["", f"The n-gram reader's share, each fold's chosen on the other folds' held-out "
                  f"predictions ([how](TRAINING.md#an-n-gram-reader-beside-a-namespace)): {shares}."]
    run_time = run_time_relations(settings, bench, task, folds, best[0]) if reader else None
    if run_time:
        lines += ["", run_time]
    lines += ["", f"Abstaining below the threshold chosen on each fold's selection half"
              + (" (with a reader beside its half model)" if reader else "") + ": coverage "
              f"{answered / max(targets, 1):.3f}, precision {correct / max(answered, 1):.3f} "
              f"(answering every target: {model_f1:.3f}). Chosen per fold: {chosen}.", ""]
    # The link is relative to the results file; the command's path to where colswarm runs.
    kept = settings.kept / kept_name(bench, task)
    link = f"{settings.kept.name}/{kept.name}"
    shown = kept.relative_to(ROOT) if kept.is_relative_to(ROOT) else kept
    lines += [f"The recipe's held-out predictions: [`{shown}`]({link}) (answering every target); "
              f"`colswarm compare {shown} OTHER.jsonl` pairs another system's predictions on the "
              "same folds against them.", ""]
    summary = {"bench": bench, "task": task, "model": model_f1, "reader": reader, "best_peer": best[0],
               "best_peer_f1": best[1]["micro_f1_b"], "difference": best[1]["difference"],
               "ci": (best[1]["ci_low"], best[1]["ci_high"]), "targets": n_targets}
    return lines, summary


def run_time_relations(settings, bench, task, folds, peer):
    """Relations as `annotate` gives them, read from the subject column the model finds
    (`eval --own-subject`), against PEER given the same subject columns: a paragraph, or None
    where the folds have no such predictions (types, or a run from before them)."""
    if task != "cpa" or not all(
            (settings.out / bench / f"fold{k}" / f"model-reader-{task}-own-subject.jsonl").exists()
            for k in folds):
        return None
    own = pooled_reader(settings.out, bench, task, folds, own_subject=True)
    targets = [json.loads(line) for line in own.read_text().splitlines() if line.strip()]
    # A pair whose subject is another column than the one found gets no prediction at all.
    lost = {(t["table"], t.get("subject"), t["column"]) for t in targets if not t["predicted"]}
    masked = settings.out / bench / f"{task}-{peer}-own-subject.jsonl"
    with open(masked, "w") as out:
        for line in pooled(settings, bench, task, folds, peer).read_text().splitlines():
            if line.strip():
                target = json.loads(line)
                if (target["table"], target.get("subject"), target["column"]) in lost:
                    target["predicted"] = []
                out.write(json.dumps(target) + "\n")
    c = compare(settings, own, masked)
    tables = {t["table"] for t in targets}
    return (f"**Relations at run time.** `annotate` reads relations from the subject column it "
            f"finds itself ([how](ARCHITECTURE.md#the-subject-column)), not from the one the set "
            f"names. Here it finds another column in {len({t for t, _, _ in lost})} of "
            f"{len(tables)} tables, whose {len(lost)} of {len(targets):,} pairs then count as "
            f"misses. Scored so (`eval --own-subject`), the recipe scores {c['micro_f1_a']:.3f} "
            f"and {peer}, given the same subject columns, {c['micro_f1_b']:.3f}: "
            f"{c['difference']:+.3f} ({c['ci_low']:+.3f} to {c['ci_high']:+.3f}).")


def subject_text(margin):
    """A subject-label choice in words."""
    return "no subject label" if margin is None else f"subject label at margin {margin}"


def stored_settings(bench, task, summaries, folds):
    """The folds' median choices beside what the shipped model stores for the namespace."""
    labels = json.loads((ROOT / SHIPPED / "labels.json").read_text())
    namespace = next((n for n in labels[task] if n["name"] == bench), {})
    specialists = json.loads((ROOT / SHIPPED / "swarm.json").read_text())["specialists"]
    experts = [s for s in specialists if s["contributes"] == "answers"]
    opens = sorted({e.get("open_below", 1.0) for e in experts if e["name"].startswith(bench)})
    median = lambda values: statistics.median(values) if values else None
    chosen_open = [opening(summaries[k]["open_below"]) for k in folds]
    reader_of = lambda k: (summaries[k].get("reader") or {}).get(task)
    thresholds = [(reader_of(k) or summaries[k]["results"][task])["threshold"] for k in folds]
    parts = [f"experts opening {opening_text(median([o for o in chosen_open if o is not None]))}"
             f" ({sum(o is None for o in chosen_open)} of {len(folds)} folds chose none)"
             if any(o is not None for o in chosen_open) else "no expert"]
    stored = [f"experts opening {', '.join(map(opening_text, opens))}" if opens else "no expert"]
    # The mix weights of the benchmark's namespace (every fold's, for each expert that knows it).
    chosen_mix, shipped_mix = defaultdict(list), routing_mix(ROOT / SHIPPED)
    for k in folds:
        for pair, theta in (summaries[k].get("mix") or {}).items():
            expert, mixed = pair.split("@")
            if mixed == f"{task}:{bench}":
                chosen_mix[expert].append(theta)
    # An expert that knows none of the namespace's labels keeps its starting weight, 0.
    chosen_mix = {e: t for e, t in chosen_mix.items() if any(t)}
    if chosen_mix:
        parts.append("mix weights " + ", ".join(
            f"{e} {median(t):.2f}" for e, t in sorted(chosen_mix.items())))
        # A specialist only the protocol added (`--specialist`) is not in the shipped model.
        shipped = {x["name"] for x in experts}
        stored.append("mix weights " + ", ".join(
            f"{e} {shipped_mix.get(f'{e}@{task}:{bench}', 1.0):.2f}" if e in shipped
            else f"{e} none (not in the shipped model)" for e in sorted(chosen_mix)))
    if bench == "t2d":
        parts.insert(0, f"prior {median([summaries[k]['weights'][task] for k in folds])}")
        stored.insert(0, f"prior {namespace.get('label_name_weight')}")
        if task == "cpa":
            chosen = [summaries[k].get("cpa_priors") or [0, 0] for k in folds]
            parts.insert(1, f"type view {median([c[0] for c in chosen])}, header memory "
                            f"{median([c[1] for c in chosen])}")
            memory = (namespace.get("header_memory") or {}).get("weight")
            stored.insert(1, f"type view {namespace.get('type_view_weight')}, header memory {memory}")
        if all("subject_margin" in summaries[k] for k in folds):
            margins = [summaries[k]["subject_margin"] for k in folds]
            given = [m for m in margins if m is not None]
            parts.append(f"subject label at margin {median(given)} ({len(margins) - len(given)} of "
                         f"{len(folds)} folds chose none)" if given else "no subject label")
            typed = next((n for n in labels["cta"] if n["name"] == bench), {})
            shipped = typed.get("subject_label")
            stored.append(subject_text(shipped["margin"] if shipped else None))
    if all(reader_of(k) for k in folds):
        parts.append(f"reader share {median([reader_of(k)['share'] for k in folds])}")
        stored.append(f"reader share {(namespace.get('reader') or {}).get('share')}")
    if all(t is not None for t in thresholds):
        parts.append(f"threshold {median(thresholds):.2f}")
        stored.append(f"threshold {namespace.get('abstain_below')}")
    return (f"The folds' median choice: {', '.join(parts)}; the shipped model stores "
            f"{', '.join(stored)}.")


def head_row(summary):
    s = summary
    return (f"| {TITLES[s['bench'], s['task']]} | **{s['model']:.3f}** | {s['best_peer']} "
            f"{s['best_peer_f1']:.3f} | {s['difference']:+.3f} ({s['ci'][0]:+.3f} to {s['ci'][1]:+.3f}) |")


def duration(seconds):
    hours, rest = divmod(int(round(seconds)), 3600)
    if hours:
        return f"{hours} h {rest // 60} min"
    return f"{rest // 60} min {rest % 60} s" if rest >= 60 else f"{rest} s"


WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def fold_list(folds):
    return ("fold " if len(folds) == 1 else "folds ") + ", ".join(map(str, folds))


def at_a_time(folds):
    """How many folds ran at once: "one fold at a time", or per group of folds."""
    by_jobs = defaultdict(list)
    for f in folds:
        by_jobs[f.get("jobs")].append(f["fold"])
    if None in by_jobs:
        return None
    said = lambda jobs: "one fold" if jobs == 1 else f"{WORDS.get(jobs, jobs)} folds"
    if len(by_jobs) == 1:
        return f"{said(next(iter(by_jobs)))} at a time"
    return ", ".join(f"{fold_list(ks)} {said(jobs)} at a time" for jobs, ks in by_jobs.items())


def made_by_one(record):
    """How one benchmark's tables were made: the commit of each fold's models, choices, scores
    and peers, its run time, and the reader stage's commit and run time."""
    folds = record.get("folds") or []
    # A fold run before the protocol recorded commits, or a record older than per-fold ones
    # (whose own commit was the one that wrote it), has none to name.
    by_commit = defaultdict(list)
    for f in folds:
        by_commit[f.get("commit") or "an unrecorded commit"].append(f["fold"])
    named = [("commit " if c != "an unrecorded commit" else "") + c
             + (f" ({fold_list(ks)})" if len(by_commit) > 1 else "") for c, ks in by_commit.items()]
    commits = " and ".join(named) or "an unrecorded commit"
    works = [f.get("work_seconds") for f in folds]
    if folds and None not in works:
        at_once = at_a_time(folds)
        took = (f"{duration(sum(works))} of run time on one thread: its folds' training, choices,"
                f" scores and peers added up" + (f"; {at_once}" if at_once else ""))
    else:
        took = (f"{duration(record['seconds'])} of run time: its work directory's when the record"
                " was made, every run in it added up, of every benchmark")
    # Folds whose models were kept from a run at another commit name both.
    models = sorted({f["models_commit"] for f in folds if f.get("models_commit")})
    text = ((f"models trained at {' and '.join(models)}, choices, scores and peers at {commits}"
             if models else f"models, choices, scores and peers at {commits}")
            + (" (tiny mode: a test of the protocol, not a result)" if record["tiny"] else "")
            + "".join(f" with `{flag}`" for flag in change_flags(record.get("recipe_sets", NO_CHANGES)))
            + ("" if record["refit"] else " with `--no-refit`: each fold's model and expert trained"
               " without their selection half, not retrained on the whole training part")
            + f" ({took})")
    peers = sorted({f["peers_commit"] for f in folds if f.get("peers_commit")})
    if peers:
        text += f", peers added since at {' and '.join(peers)}"
    reader = record.get("reader")
    if reader:
        seconds = reader.get("seconds")
        text += (f", and the n-gram reader, the recipe's last step, at {' and '.join(reader['commits'])}"
                 + (f" ({duration(seconds)})" if seconds is not None else " (run time not recorded)"))
    return text


def made_by(records):
    """The line that says which commits made each benchmark's tables, and in how long (a record
    kept beside the results file says it in its own words)."""
    return ("Made by `scripts/evaluate-recipe.sh`, on the machine it ran on. "
            + "; ".join(f"{NAMES[bench]}: {record.get('made_by') or made_by_one(record)}"
                        for bench, record in records.items())
            + ".")


def record_file(settings, bench):
    """Where a benchmark's record is kept beside the results file (committed with it), so that
    a later run of another benchmark, in another work directory or on another machine, keeps
    its tables."""
    return settings.kept / f"{bench}-record.json"


def latest_record(settings, bench):
    """BENCH's latest record: its work directory's, else the one kept beside the results file;
    None where neither exists."""
    for file in (settings.out / bench / "results.json", record_file(settings, bench)):
        if file.exists():
            return json.loads(file.read_text())
    return None


def fold_record(summary, k):
    return {"fold": k, "commit": summary.get("commit"), "work_seconds": summary.get("work_seconds"),
            "jobs": summary.get("jobs"), "peers_commit": summary.get("peers_commit"),
            "models_commit": summary.get("models_commit")}


def reader_record(summaries):
    """The reader stage's commits and run time over a benchmark's folds and tasks (None where it
    did not run)."""
    entries = [e for s in summaries.values() for e in (s.get("reader") or {}).values()]
    if not entries:
        return None
    commits = sorted({e.get("commit") or "an unrecorded commit" for e in entries})
    seconds = [e.get("seconds") for e in entries]
    return {"commits": commits, "seconds": None if None in seconds else round(sum(seconds), 1)}


def write_results(settings, done, path, seconds):
    """Writes the tables of the benchmarks run now into OUT/BENCH/results.json and beside PATH
    (`results/BENCH-record.json`), and the results block of PATH from every benchmark's latest
    record, so that a run of one benchmark keeps the others' tables (each says the commits that
    made it)."""
    for bench in done:
        lines, summaries = [], []
        for task in (["cta", "cpa"] if bench == "t2d" else ["cta"]):
            section, summary = benchmark_section(settings, bench, task, done[bench])
            lines += section
            summaries.append(summary)
        record = {"seconds": seconds, "tiny": settings.tiny, "recipe_sets": settings.recipe_sets,
                  "refit": settings.refit,
                  "folds": [fold_record(done[bench][k], k) for k in sorted(done[bench])],
                  "reader": reader_record(done[bench]), "lines": lines, "summaries": summaries}
        (settings.out / bench / "results.json").write_text(json.dumps(record, indent=1))
        # The kept copy says who made it in words: its folds' work directory may be gone.
        kept = {key: record[key] for key in ("tiny", "lines", "summaries")}
        record_file(settings, bench).parent.mkdir(parents=True, exist_ok=True)
        record_file(settings, bench).write_text(
            json.dumps({"made_by": made_by_one(record), **kept}, indent=1, ensure_ascii=False) + "\n")
    records = {}
    for bench in ("wikitables", "gittables", "t2d"):
        record = latest_record(settings, bench)
        if record is not None:
            records[bench] = record
    summaries = [s for r in records.values() for s in r["summaries"]]
    head = [BEGIN, "", "| benchmark | the recipe | best peer | recipe − best peer (95%) |",
            "|---|---|---|---|", *map(head_row, summaries), "", made_by(records), ""]
    block = "\n".join(head + [line for r in records.values() for line in r["lines"]] + [END])
    text = path.read_text() if path.exists() else ""
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text + ("\n" if text else "") + block + "\n"
    path.write_text(text)
    (settings.out / "summary.json").write_text(json.dumps(summaries, indent=1))
    return [s for bench in done for s in records[bench]["summaries"]]
