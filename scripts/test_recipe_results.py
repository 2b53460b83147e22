"""scripts/recipe_results.py's "Made by" line: which commits it names for a benchmark's folds,
their models and their reader stage."""

import json
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

from recipe_results import BEGIN, END, made_by_one, stored_settings, write_results


def record(folds, reader=None):
    return {"folds": folds, "tiny": False, "refit": True, "seconds": 1.0,
            "recipe_sets": {"model": [], "expert": []}, "reader": reader}


def fold(k, commit="abc1234", models=None):
    return {"fold": k, "commit": commit, "work_seconds": 3600.0, "jobs": 1, "peers_commit": None,
            "models_commit": models}


class MadeBy(unittest.TestCase):
    def test_folds_that_trained_their_own_models_name_one_commit(self):
        text = made_by_one(record([fold(0), fold(1)]))
        self.assertTrue(text.startswith("models, choices, scores and peers at commit abc1234 ("), text)
        self.assertIn("2 h 0 min of run time on one thread", text)

    def test_models_kept_from_another_commit_are_named_apart(self):
        text = made_by_one(record([fold(0, models="92c230e"), fold(1, models="92c230e")],
                                  reader={"commits": ["abc1234"], "seconds": 30.0}))
        self.assertTrue(text.startswith(
            "models trained at 92c230e, choices, scores and peers at commit abc1234 ("), text)
        self.assertIn("the n-gram reader, the recipe's last step, at abc1234 (30 s)", text)

    def test_folds_of_two_commits_say_which_fold_is_which(self):
        text = made_by_one(record([fold(0), fold(1, commit="def5678")]))
        self.assertIn("commit abc1234 (fold 0) and commit def5678 (fold 1)", text)


class Stored(unittest.TestCase):
    def test_a_specialist_the_shipped_model_lacks_is_said_to_be_absent(self):
        # Two folds' choices for T2D types, beside the shipped model's own settings.
        summary = {"open_below": 0.8, "weights": {"cta": 12}, "results": {"cta": {"threshold": 0.4}},
                   "mix": {"t2d-expert@cta:t2d": 1.4, "twin@cta:t2d": 1.0}}
        text = stored_settings("t2d", "cta", {0: summary, 1: summary}, [0, 1])
        stored = text.split("the shipped model stores ")[1]
        self.assertIn("twin none (not in the shipped model)", stored)
        self.assertRegex(stored, r"t2d-expert \d\.\d\d")

    def test_the_subject_label_s_margin_is_the_median_of_the_folds_that_chose_one(self):
        fold = lambda margin: {"open_below": 0.8, "weights": {"cpa": 8}, "subject_margin": margin,
                               "cpa_priors": [0.5, 0], "results": {"cpa": {"threshold": 0.2}}}
        summaries = {0: fold(0.5), 1: fold(None), 2: fold(0.9)}
        text = stored_settings("t2d", "cpa", summaries, [0, 1, 2])
        chosen, stored = text.split("; the shipped model stores ")
        self.assertIn("subject label at margin 0.7 (1 of 3 folds chose none)", chosen)
        self.assertRegex(stored, r"subject label at margin \d\.\d|no subject label")


class KeptRecords(unittest.TestCase):
    def test_a_fresh_work_directory_keeps_the_tables_recorded_beside_the_results(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            settings = SimpleNamespace(out=tmp / "work", kept=tmp / "results")
            settings.out.mkdir()
            settings.kept.mkdir()
            summary = {"bench": "wikitables", "task": "cta", "model": 0.8, "best_peer": "majority",
                       "best_peer_f1": 0.3, "difference": 0.5, "ci": [0.4, 0.6]}
            (settings.kept / "wikitables-record.json").write_text(json.dumps(
                {"made_by": "models at commit abc1234 (1 h 0 min)", "tiny": False,
                 "lines": ["### WikiTables table", ""], "summaries": [summary]}))
            results = tmp / "RESULTS.md"
            results.write_text(f"# Results\n\n{BEGIN}\nstale block\n{END}\nKept below.\n")
            write_results(settings, {}, results, 0.0)
            text = results.read_text()
            self.assertIn("### WikiTables table", text)
            self.assertIn("WikiTables: models at commit abc1234 (1 h 0 min).", text)
            self.assertIn("| **0.800** | majority 0.300 | +0.500 (+0.400 to +0.600) |", text)
            self.assertNotIn("stale block", text)
            self.assertTrue(text.endswith(f"{END}\nKept below.\n"), text)


if __name__ == "__main__":
    unittest.main()
