"""card.py on a tiny pretraining run, over a package corpus and over an in-domain corpus.

    python3 -m unittest discover -s scripts/knowledge -p 'test_*.py'

Stdlib only; nothing is read from .knowledge/ or datasets/.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent


def write_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def make_run(run: Path, held_out_cosine: float) -> None:
    # The layout of `colswarm pretrain`'s run.json (PretrainConfig).
    write_json(run / "run.json", {
        "objective": "header",
        "encoder": {"d_model": 64, "n_layers": 2, "head_size": 32},
        "data": {"serialize": {"max_table_tokens": 128, "max_rows": 8, "max_cell_bytes": 24},
                 "max_columns": 3, "held_out_every": 20, "eval_tables": 512},
        "steps": 3000, "eval_every": 1000,
        "optimizer": {"batch_size": 32, "learning_rate": 0.002, "warmup_steps": 50,
                      "lr_decay": "constant", "grad_clip": 1.0, "weight_decay": 0.0},
        "run": {"seed": 0, "checkpoint_every": 250, "keep_last": 2, "log_every": 10,
                "on_non_finite": "stop"},
    })
    write_json(run / "report.json", {
        "steps": 3000, "objective": "header",
        "corpus": {"gazetteers": 2, "gazetteer_entries": 10, "tables": 7, "table_columns": 40,
                   "teacher_strings": 99, "classes": None},
        "held_out": {"accuracy": None, "cosine": held_out_cosine, "cosine_of_mean": 0.5,
                     "header_top1": 0.1, "header_candidates": 50, "columns": 80},
    })
    (run / "log.jsonl").write_text(json.dumps({"event": "step", "step": 3000, "seconds": 600.0}) + "\n")
    (run / "specialist.safetensors").write_bytes(b"\0" * 1000)


def make_base(corpus: Path) -> None:
    write_json(corpus / "manifest.json", {"sources": [
        {"package": "tables-pkg", "ecosystem": "pypi", "version": "1.0", "license": "MIT",
         "ship": True, "counts": {"tables": 5}},
        {"package": "teacher-pkg", "ecosystem": "pypi", "version": "0.1", "license": "Apache-2.0",
         "ship": True, "counts": {}},
    ]})
    write_json(corpus / "teacher" / "manifest.json", {"teacher": {"package": "teacher-pkg"}})


def card(held_out_cosine: float, indomain: dict | None = None) -> str:
    """The card of a run scored `held_out_cosine`, over a package corpus or, given the
    manifest indomain.py writes, over an in-domain corpus `corpus-indomain-x` built on it."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        make_base(tmp / "corpus")
        corpus = tmp / "corpus"
        if indomain is not None:
            corpus = tmp / "corpus-indomain-x"
            write_json(corpus / "manifest.json", {**indomain, "base": str(tmp / "corpus")})
        make_run(tmp / "run", held_out_cosine)
        return subprocess.run(
            [sys.executable, str(HERE / "card.py"), str(tmp / "run"), "header",
             "--corpus", str(corpus)],
            check=True, capture_output=True, text=True).stdout


class CardTest(unittest.TestCase):
    def test_package_corpus_card_names_its_sources_and_flags_a_score_below_constant(self):
        text = card(held_out_cosine=0.4)
        self.assertIn("| tables-pkg (pypi) | 1.0 | MIT |", text)
        self.assertIn("teacher (`teacher/`)", text)
        self.assertIn("further from the teacher than a constant", text)
        self.assertNotIn("labelled sets", text)
        self.assertIn("--corpus .knowledge/corpus --out", text)

    def test_indomain_corpus_card_lists_the_labelled_sets_and_how_to_rebuild_it(self):
        text = card(held_out_cosine=0.6, indomain={
            "generated_by": "scripts/knowledge/indomain.py",
            "split": "all", "sets": ["wikitables", "gittables"],
            "labelled": {"wikitables": {"tables": 3, "columns": 9},
                         "gittables": {"tables": 1200, "columns": 4000}},
            "licenses": {name: {"title": title, "license": "see PROVENANCE", "provenance": f"{name}.md"}
                         for name, title in [("wikitables", "WikiTables"),
                                             ("gittables", "GitTables SemTab'22 (REVEAL)")]},
        })
        self.assertIn("with the labelled sets' own tables", text)
        self.assertIn("| GitTables SemTab'22 (REVEAL) (`gittables.md`) | every table | see PROVENANCE |", text)
        self.assertIn("tables: 1,200 (4,000 columns)", text)
        self.assertNotIn("T2D gold standard", text)
        self.assertIn("T2D is left out", text)
        self.assertIn("Of the packages' data, only entries", text)
        self.assertNotIn("further from the teacher", text)
        self.assertIn("indomain.py --split all --sets wikitables,gittables "
                      "--out .knowledge/corpus-indomain-x", text)
        self.assertIn("--corpus .knowledge/corpus-indomain-x --out", text)


if __name__ == "__main__":
    unittest.main()
