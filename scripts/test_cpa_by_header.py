"""scripts/cpa-by-header.py's words and buckets: the same words as the label-name prior's
(`colswarm_model::label_names`, whose tests these examples mirror)."""

import importlib.util
import unittest
from pathlib import Path

spec = importlib.util.spec_from_file_location("cpa_by_header", Path(__file__).with_name("cpa-by-header.py"))
cpa_by_header = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cpa_by_header)


class Words(unittest.TestCase):
    def test_words_split_on_non_letters_and_camel_case(self):
        words = cpa_by_header.name_words
        self.assertEqual(words("Release date:"), {"release", "date"})
        self.assertEqual(words("populationTotal"), {"population", "total"})
        self.assertEqual(words("IATA code (2012)"), {"iata", "code"})
        self.assertEqual(words("Höhe über NN"), {"höhe", "über", "nn"})
        self.assertEqual(words("1,234 / 5"), set())

    def test_a_label_is_named_by_its_last_path_segment(self):
        label_words = cpa_by_header.label_words
        self.assertEqual(label_words("http://dbpedia.org/ontology/PopulatedPlace/area"), {"area"})
        self.assertEqual(label_words("http://www.w3.org/2000/01/rdf-schema#label"), {"label"})
        self.assertEqual(label_words("film.director"), {"film", "director"})

    def test_singular_and_regular_plural_share_a_form(self):
        form = cpa_by_header.word_form
        for plural, singular in [("countries", "country"), ("cities", "city"),
                                 ("languages", "language"), ("movies", "movie"),
                                 ("matches", "match"), ("boxes", "box"),
                                 ("addresses", "address"), ("headquarters", "headquarter"),
                                 ("days", "day")]:
            self.assertEqual(form(plural), form(singular), plural)
        self.assertEqual(form("status"), "status")
        self.assertEqual(form("address"), "address")
        self.assertEqual(form("analysis"), "analysis")
        self.assertEqual(form("gas"), "gas")
        self.assertNotEqual(form("state"), form("status"))

    def test_buckets_follow_the_best_overlap(self):
        jaccard, bucket = cpa_by_header.jaccard, cpa_by_header.bucket
        a = {"release", "date"}
        self.assertEqual(bucket(jaccard(a, {"release", "date"})), "exact")
        self.assertEqual(bucket(jaccard(a, {"date"})), "half")
        self.assertEqual(bucket(jaccard(a, {"date", "of", "birth"})), "some")
        self.assertEqual(bucket(jaccard(a, set())), "none")


if __name__ == "__main__":
    unittest.main()
