"""The header matcher's rules, errors that name a corrupt source file, and byte-identical
rebuilds, on tiny tables written to a temporary folder.

    python3 -m unittest discover -s scripts/corpora -p 'test_*.py'

Stdlib only (plus the git command, which the builders use to read a repository); nothing is
read from .corpora/ or .knowledge/, and from datasets/ only by CommittedManifest, which checks
that the committed Wikipedia manifest holds no table of an excluded page."""
from __future__ import annotations

import csv
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import build_opendata  # noqa: E402
import build_wikipedia  # noqa: E402
from common import (ROOT, SourceError, cap, page_key, read_excluded_pages,  # noqa: E402
                    stride)
from matcher import HeaderMatcher, HeaderTypeMap, Vectors, normalise  # noqa: E402

OFF = 1.01  # a threshold above any cosine: exact matches only


def write(path: Path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)


def csv_rows(path: Path, reader=csv.DictReader) -> list:
    """A CSV file's rows, the file closed."""
    with open(path, encoding="utf-8", newline="") as f:
        return list(reader(f))


def gz(text: str) -> bytes:
    """A file as the gold sets ship it: gzip, mtime 0."""
    return gzip.compress(text.encode("utf-8"), mtime=0)


def tgz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def git_repo(root: Path, files: dict[str, bytes | str]) -> Path:
    for name, data in files.items():
        write(root / name, data)
    env = dict(os.environ, GIT_AUTHOR_DATE="2020-01-01T00:00:00Z",
               GIT_COMMITTER_DATE="2020-01-01T00:00:00Z", GIT_AUTHOR_NAME="t",
               GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.org")
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "tables"]):
        subprocess.run(["git", "-C", str(root), *cmd], check=True, env=env, capture_output=True)
    return root


def gold_folder(root: Path) -> Path:
    """The label sets and WikiTables files the builders read, in miniature, compressed as in
    datasets/."""
    db = "table_id,col_idx,class,class_id,data\nT,0,city,3,a\nT,1,zipCode,7,b\nT,2,NaN,-1,c\n"
    sp = "table_id,col_idx,class,class_id,data\nT,0,schema:postalCode,2,a\nT,1,schema:name,5,b\n"
    for k in range(4):
        write(root / f"gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_{k}.csv.gz", gz(db))
        write(root / f"gittables-semtab22/gt-semtab22-schema-property-all/sp_semi1_cv_{k}.csv.gz",
              gz(sp))
    wt = root / "wikitables-turl-subset"
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["table_name", "table", "labels", "domain", "domains", "page_title",
                "section_title", "headers"])
    w.writerow(["1-1", "[]", "[['film.film'], ['film.director', 'people.person']]", "film",
                "{'film'}", "p", "s", "['Film', 'Director']"])
    w.writerow(["2-1", "[]", "[['film.film']]", "film", "{'film'}", "p", "s", "['film']"])
    write(wt / "train_wikitables_subset_20.csv.gz", gz(buf.getvalue()))
    write(wt / "wikitables-hierarchy-v2.json", json.dumps(
        {"film": ["film"], "director": ["director", "person"], "person": ["person"]}))
    write(wt / "labels_to_text_wikitables-2-cta.json", json.dumps(
        {"film.film": "film", "film.director": "director", "people.person": "person"}))
    # the builders' default excluded-pages file: a page that no test table is on
    write(wt / "excluded-pages.txt", "# test pages\n12345\n")
    return root


def fake_vectors(path: Path) -> Path:
    # 'town' is close to 'city' (cosine 0.8), 'banana' is orthogonal to every label
    write(path, "city 1 0 0\ntown 0.8 0.6 0\nbanana 0 0 1\nzip 0 1 0\ncode 0 1 0\n"
                "postal 0 1 0\nname 0.6 0.8 0\n")
    return path


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


class MatcherRules(unittest.TestCase):
    def test_normalise(self):
        self.assertEqual(normalise("startDate"), "start date")
        self.assertEqual(normalise("start_date"), "start date")
        self.assertEqual(normalise(" Start-Date: "), "start date")
        self.assertEqual(normalise("schema:postalCode"), "postal code")
        self.assertEqual(normalise("HTTPServer"), "http server")
        self.assertEqual(normalise("address2"), "address 2")
        self.assertEqual(normalise("ZIP  code"), "zip code")
        self.assertEqual(normalise("__"), "")

    def test_exact_match(self):
        m = HeaderMatcher(["city", "zipCode", "schema:postalCode"], None, OFF)
        self.assertEqual(m.match("Zip_Code"), ("zipCode", "exact", 1.0))
        self.assertEqual(m.match("POSTAL CODE"), ("schema:postalCode", "exact", 1.0))
        self.assertIsNone(m.match("town"))  # no vectors: no fallback
        self.assertIsNone(m.match(""))

    def test_similarity_fallback_and_threshold(self):
        with tempfile.TemporaryDirectory() as d:
            v = Vectors.load(fake_vectors(Path(d) / "v.txt"), ["city", "town", "banana", "zip",
                                                                "code", "name"])
        m = HeaderMatcher(["city", "zipCode"], v, 0.75)
        self.assertEqual(m.match("Town"), ("city", "vector", 0.8))
        self.assertIsNone(m.match("Town", threshold=0.85))  # 0.8 is below 0.85
        self.assertIsNone(m.match("banana"))  # cosine 0 with every label
        self.assertIsNone(m.match("unknownword"))  # no vector at all
        self.assertEqual(m.match("city"), ("city", "exact", 1.0))  # exact wins over vector

    def test_vector_file_errors_name_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "bad.txt"
            write(p, "city 1 0\ntown x y\n")
            with self.assertRaisesRegex(SourceError, r"bad\.txt:2"):
                Vectors.load(p, ["town"])

    def test_header_type_map(self):
        hier = {"director": ["director", "person"]}
        text = {"film.director": "director", "people.person": "person"}
        cols = [("Director", ["film.director"]), ("director", ["film.director"]),
                ("director", ["people.person"]), ("name", ["a"]), ("name", ["b"])]
        m = HeaderTypeMap(cols, hier, text, None, OFF)
        self.assertEqual(m.match("DIRECTOR")[0], ("film.director",))  # 2 of 3 kept, 1 of 3 not
        self.assertEqual(m.match("name")[0], ("a", "b"))  # 1 of 2 is 50%: both kept
        closed = HeaderTypeMap(cols, hier, text, None, OFF, close=True)
        self.assertEqual(closed.match("director")[0], ("film.director", "people.person"))
        strict = HeaderTypeMap(cols, hier, text, None, OFF, min_share=0.6)
        self.assertIsNone(strict.match("name"))

    def test_sampling_and_caps(self):
        self.assertEqual(stride(list(range(10)), 4), [0, 2, 5, 7])
        self.assertEqual(stride([1, 2], 4), [1, 2])
        self.assertEqual(cap("é" * 40, 5), "éé")  # never cuts inside a character


@unittest.skipUnless(shutil.which("git"), "needs the git command")
class Builders(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        self.gold = gold_folder(self.root / "gold")

    def tearDown(self):
        self.tmp.cleanup()

    def opendata_repo(self, extra=None):
        base = "data/opendata_socrata_com/p.example.org/"
        files = {
            base + "aaaa-0001.csv": "City,Zip_Code,Town,Notes\n" + "".join(
                f"C{i},{10000 + i},T{i},{'x' * 80}\n" for i in range(100)),
            base + "aaaa-0001.csv.options": "--locale en-US\n",
            base + "aaaa-0002.csv": "Name;postal code\nAnn;1\n",
            base + "aaaa-0002.csv.options": "--locale en-US --delimiter ;\n",
            base + "aaaa-0003.csv": "<html></html>\n",
            base + "aaaa-0003.csv.ignore": "File claims to be CSV but is actually an HTML file\n",
        }
        files.update(extra or {})
        return git_repo(self.root / "opendata-src", files)

    def test_opendata_builds_twice_identically(self):
        repo = self.opendata_repo()
        th = {"gittables-dbpedia": OFF, "gittables-schema": OFF}
        a, b = self.root / "a", self.root / "b"
        m = build_opendata.build(repo, a, None, th, gold=self.gold, manifest_copy=self.root / "ma.gz")
        build_opendata.build(repo, b, None, th, gold=self.gold, manifest_copy=self.root / "mb.gz")
        self.assertEqual(files_of(a), files_of(b))
        self.assertEqual((self.root / "ma.gz").read_bytes(), (self.root / "mb.gz").read_bytes())
        self.assertEqual(m["counts"]["tables"], 2)
        self.assertEqual(m["counts"]["ignored_by_repository"], 1)
        labels = [json.loads(x) for x in (a / "labels-dbpedia.jsonl").read_text().splitlines()]
        self.assertEqual([(x["column"], x["label"], x["rule"]) for x in labels],
                         [(0, "city", "exact"), (1, "zipCode", "exact")])
        table = csv_rows(a / "tables/p.example.org/aaaa-0001.csv", csv.reader)
        self.assertEqual(len(table), 65)  # header + 64 sampled rows
        self.assertEqual(len(table[1][3]), 64)  # cells capped at 64 bytes
        fold = csv_rows(a / "silver-schema.csv")
        self.assertEqual([(r["col_idx"], r["class"], r["class_id"]) for r in fold],
                         [("0", "schema:name", "5"), ("1", "schema:postalCode", "2")])

    def test_opendata_vector_rule(self):
        repo = self.opendata_repo()
        vec = fake_vectors(self.root / "v.txt")
        th = {"gittables-dbpedia": 0.75, "gittables-schema": OFF}
        m = build_opendata.build(repo, self.root / "a", vec, th, gold=self.gold)
        labels = [json.loads(x) for x in
                  (self.root / "a/labels-dbpedia.jsonl").read_text().splitlines()]
        self.assertIn({"table": "data/opendata_socrata_com/p.example.org/aaaa-0001.csv",
                       "column": 2, "header": "Town", "label": "city", "rule": "vector",
                       "score": 0.8}, labels)
        # 'Name' and 'postal code' are nearest to zipCode (cosine 0.8 and 1.0): also vector
        self.assertEqual(m["counts"]["labels"]["dbpedia"]["by_rule"], {"exact": 2, "vector": 3})

    def test_opendata_corrupt_file_is_named(self):
        bad = "data/opendata_socrata_com/p.example.org/bbbb-0009.csv"
        repo = self.opendata_repo({bad: b"a,b\n\"unclosed,1\nx\xff\xfe,2\n"})
        th = {"gittables-dbpedia": OFF, "gittables-schema": OFF}
        with self.assertRaises(SourceError) as e:
            build_opendata.build(repo, self.root / "a", None, th, gold=self.gold)
        self.assertIn(bad, str(e.exception))
        m = build_opendata.build(repo, self.root / "b", None, th, gold=self.gold,
                                 skip_unreadable=True)
        self.assertEqual([u["id"] for u in m["unreadable"]], [bad])
        # from the command line: one clear line, no traceback
        p = subprocess.run([sys.executable, str(HERE / "build_opendata.py"), str(self.root / "nope")],
                           capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("nope", p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def wiki_repo(self, extra=None):
        table = {"_id": "1-1", "pgId": 77, "pgTitle": "Some films", "numCols": 2,
                 "headers": [{"text": "[Film_(x)|Film]", "links": []}, {"text": "Year", "links": []}],
                 "rows": [[{"text": "Alien", "links": ["http://www.wikipedia.org/wiki/Alien"]},
                           {"text": "1979", "links": []}]]}
        files = {
            "table_corpus/tables_2019/tables_part_1.tar.gz":
                tgz({"tables_part_1/77-1.json": json.dumps(table).encode()}),
            "table_corpus/csv_tables_2019/tables_part_2.tar.gz":
                tgz({"csv_tables_2019/tables_part_2/88-3.csv":
                     b"Director,Film\nRidley_Scott,Alien\n"}),
        }
        files.update(extra or {})
        return git_repo(self.root / "wiki-src", files)

    def test_wikipedia_builds_twice_identically(self):
        repo = self.wiki_repo()
        a, b = self.root / "a", self.root / "b"
        m = build_wikipedia.build(repo, a, OFF, False, None, gold=self.gold)
        build_wikipedia.build(repo, b, OFF, False, None, gold=self.gold)
        self.assertEqual(files_of(a), files_of(b))
        self.assertEqual(m["counts"]["tables"], 2)
        # 'Film' in the CSV table matches but its cell is plain text, not a link target
        self.assertEqual(m["counts"]["matched_but_not_entity_columns"], 1)
        self.assertEqual(m["groups"][0]["tables"], [["77-1", 77, 1, 2, "Some films", 1]])
        self.assertEqual(m["groups"][1]["tables"], [["88-3", 88, 1, 2]])
        self.assertEqual(m["left_out"]["tables"], 0)
        labels = [json.loads(x) for x in (a / "labels.jsonl").read_text().splitlines()]
        self.assertEqual([(x["table"], x["column"], x["label"]) for x in labels],
                         [("2019/77-1", 0, "film.film"), ("2019/88-3", 0, "film.director"),
                          ("2019/88-3", 0, "people.person")])

    def test_wikipedia_corrupt_archive_is_named(self):
        bad = "table_corpus/csv_tables_2019/tables_part_9.tar.gz"
        repo = self.wiki_repo({bad: b"\x1f\x8b this is not gzip"})
        with self.assertRaises(SourceError) as e:
            build_wikipedia.build(repo, self.root / "a", OFF, False, None, gold=self.gold)
        self.assertIn(bad, str(e.exception))
        self.assertIn("tar.gz", str(e.exception))

    def test_wikipedia_in_turl_layout(self):
        import ast
        from wikipedia_turl import convert
        corpus = self.root / "corpus"
        build_wikipedia.build(self.wiki_repo(), corpus, OFF, False, None, gold=self.gold)
        dev = self.root / "dev.csv.gz"  # a gold file whose one table is on page 88
        write(dev, gz("table_name,table,labels,domain,domains,page_title,section_title,headers\n"
                      "88-5,[],[],,[],P,,[]\n"))
        out = self.root / "turl"
        none = [self.gold / "wikitables-turl-subset/excluded-pages.txt"]  # lists no page here
        done = convert(corpus, out, [1], [dev], exclude_pages=none)
        self.assertEqual((done["kept"], done["left_out"], done["left_out_listed"]), (1, 1, 0))
        self.assertEqual(done["files"], {"1": [1, 1], "all": [1, 1]})
        rows = csv_rows(out / "silver-all.csv")
        self.assertEqual([r["table_name"] for r in rows], ["2019-77-1"])
        self.assertEqual(ast.literal_eval(rows[0]["labels"]), [["film.film"], []])
        self.assertEqual(ast.literal_eval(rows[0]["headers"]), ["", ""])  # headers left out
        self.assertEqual(ast.literal_eval(rows[0]["table"]),
                         [[[[0, 0], [0, "Alien"]]], [[[0, 1], [0, "1979"]]]])
        # without the exclusion, the CSV table's link target becomes text
        convert(corpus, out, [], [], keep_headers=True, exclude_pages=none)
        rows = csv_rows(out / "silver-all.csv")
        by_name = {r["table_name"]: r for r in rows}
        self.assertEqual(ast.literal_eval(by_name["2019-88-3"]["table"])[0],
                         [[[0, 0], [0, "Ridley Scott"]]])
        self.assertEqual(ast.literal_eval(by_name["2019-88-3"]["headers"]), ["Director", "Film"])

    def pages_file(self, name: str, text: str) -> Path:
        path = self.root / name
        write(path, text)
        return path

    def test_wikipedia_leaves_out_listed_pages(self):
        repo = self.wiki_repo()
        listed = self.pages_file("pages.txt", "# held-out pages\n\n88\n")
        a = self.root / "a"
        m = build_wikipedia.build(repo, a, OFF, False, None, gold=self.gold,
                                  exclude_pages=[listed])
        self.assertEqual(m["left_out"], {"pages_files": [str(listed)], "tables": 1, "pages": 1,
                                         "tables_without_wikipedia_page_id": 0})
        self.assertEqual(m["counts"]["tables"], 1)
        self.assertEqual(m["groups"][1]["tables"], [])  # the CSV archive's one table is on 88
        self.assertFalse((a / "tables/2019-csv-002/88-3.csv").exists())
        labels = [json.loads(x) for x in (a / "labels.jsonl").read_text().splitlines()]
        self.assertEqual([x["table"] for x in labels], ["2019/77-1"])
        self.assertEqual(m["counts"]["per_type"], {"film.film": 1})
        self.assertEqual(m["counts"]["matched_but_not_entity_columns"], 0)
        # the default file (the gold folder's) lists no page of these tables
        m = build_wikipedia.build(repo, self.root / "b", OFF, False, None, gold=self.gold)
        self.assertEqual((m["counts"]["tables"], m["left_out"]["tables"]), (2, 0))
        # the 2013 archives number their pages themselves: pgId 88 there is not page 88
        t2013 = {"pgId": 88, "pgTitle": "Other", "headers": [{"text": "Film"}],
                 "rows": [[{"text": "Alien", "links": ["x"]}]]}
        repo = self.wiki_repo({"table_corpus/tables_2013/tables_part_1.tar.gz":
                               tgz({"tables_part_1/table-0088-1.json": json.dumps(t2013).encode()})})
        m = build_wikipedia.build(repo, self.root / "c", OFF, False, None, gold=self.gold,
                                  exclude_pages=[listed])
        self.assertEqual([t[0] for g in m["groups"] for t in g["tables"]],
                         ["table-0088-1", "77-1"])
        self.assertEqual((m["left_out"]["tables"], m["left_out"]["tables_without_wikipedia_page_id"]),
                         (1, 1))

    def test_wikipedia_manifest_filter_equals_a_build(self):
        repo = self.wiki_repo()
        default = self.gold / "wikitables-turl-subset/excluded-pages.txt"
        p88 = self.pages_file("p88.txt", "88\n")
        p77 = self.pages_file("p77.txt", "# leading zeros are the same page\n0077\n")
        old = self.root / "old.json.xz"
        build_wikipedia.build(repo, self.root / "a", OFF, False, None, gold=self.gold,
                              manifest_copy=old)
        before = old.read_bytes()
        done = build_wikipedia.filter_manifest(old, repo, [p88], gold=self.gold)
        self.assertEqual(done, {"tables": 1, "pages": 1})
        want = self.root / "want.json.xz"
        build_wikipedia.build(repo, self.root / "b", OFF, False, None, gold=self.gold,
                              manifest_copy=want, exclude_pages=[default, p88])
        self.assertNotEqual(old.read_bytes(), before)
        self.assertEqual(old.read_bytes(), want.read_bytes())
        # again with the same file: nothing to do, the bytes stay
        self.assertEqual(build_wikipedia.filter_manifest(old, repo, [p88], gold=self.gold),
                         {"tables": 0, "pages": 0})
        self.assertEqual(old.read_bytes(), want.read_bytes())
        # a second file, in a second step: as one build with all three files
        build_wikipedia.filter_manifest(old, repo, [p77], gold=self.gold)
        m = build_wikipedia.build(repo, self.root / "c", OFF, False, None, gold=self.gold,
                                  manifest_copy=want, exclude_pages=[default, p88, p77])
        self.assertEqual(old.read_bytes(), want.read_bytes())
        self.assertEqual((m["counts"]["tables"], m["counts"]["labelled_columns"],
                          m["counts"]["per_type"], m["left_out"]["tables"]), (0, 0, {}, 2))

    def test_converter_leaves_out_listed_pages(self):
        from wikipedia_turl import convert
        corpus = self.root / "corpus"  # built before its builder left page 88 out
        build_wikipedia.build(self.wiki_repo(), corpus, OFF, False, None, gold=self.gold)
        listed = self.pages_file("pages.txt", "88\n")
        out = self.root / "turl"
        done = convert(corpus, out, [], [], exclude_pages=[listed])
        self.assertEqual((done["kept"], done["left_out"], done["left_out_listed"]), (1, 1, 1))
        with open(out / "silver-all.csv", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([r["table_name"] for r in rows], ["2019-77-1"])
        # from the command line: the count is printed
        p = subprocess.run([sys.executable, str(HERE / "wikipedia_turl.py"), str(corpus),
                            "--out", str(out), "--sizes", "--exclude-pages", str(listed)],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"1 left out: 1 on a page listed in {listed}", p.stdout)

    def test_malformed_pages_file_is_named_with_its_line(self):
        from wikipedia_turl import convert
        repo = self.wiki_repo()
        bad = self.pages_file("bad.txt", "# pages\n88\n12a\n")
        for call in (lambda: build_wikipedia.build(repo, self.root / "a", OFF, False, None,
                                                   gold=self.gold, exclude_pages=[bad]),
                     lambda: convert(self.root / "nope", self.root / "t", [], [],
                                     exclude_pages=[bad]),
                     lambda: read_excluded_pages(bad)):
            with self.assertRaisesRegex(SourceError, rf"^{bad}:3: not a Wikipedia page id"):
                call()
        empty = self.pages_file("empty.txt", "# only a comment\n")
        with self.assertRaisesRegex(SourceError, rf"^{empty}: lists no page ids"):
            read_excluded_pages(empty)
        with self.assertRaisesRegex(SourceError, "missing.txt: cannot read"):
            read_excluded_pages(self.root / "missing.txt")
        # from the command line: one line naming the file and line, no traceback
        p = subprocess.run([sys.executable, str(HERE / "build_wikipedia.py"), str(repo),
                            "--out", str(self.root / "c"), "--exclude-pages", str(bad)],
                           capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(f"{bad}:3", p.stderr)
        self.assertNotIn("Traceback", p.stderr)


class CommittedManifest(unittest.TestCase):
    def test_wikipedia_manifest_holds_no_table_of_an_excluded_page(self):
        import lzma
        pages = read_excluded_pages(ROOT / "datasets/wikitables-turl-subset/excluded-pages.txt")
        self.assertGreater(len(pages), 300)
        m = json.loads(lzma.decompress(
            (ROOT / "datasets/silver/wikipedia.manifest.json.xz").read_bytes()))
        found, n = [], 0
        for g in m["groups"]:
            at = g["fields"].index("page_id")
            n += len(g["tables"])
            found += [t[0] for t in g["tables"] if page_key(t[at]) in pages]
        self.assertEqual(found, [])
        self.assertEqual(m["counts"]["tables"], n)
        self.assertEqual(m["left_out"]["pages_files"],
                         ["datasets/wikitables-turl-subset/excluded-pages.txt"])



class SilverT2dTest(unittest.TestCase):
    def test_labels_become_the_t2d_uris_of_their_names(self):
        from silver_t2d import rename, t2d_properties
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            dbo = "http://dbpedia.org/ontology/"
            attributes = {
                "a.csv": f'"{dbo}zipCode","Zip","False","1"\n'
                         '"http://www.w3.org/2000/01/rdf-schema#label","Name","True","0"\n',
                "b.csv": f'"{dbo}Person/weight","w","False","2"\n'
                         f'"{dbo}weight","w","False","3"\n'
                         f'"{dbo}Car/height","h","False","4"\n'
                         f'"{dbo}Person/height","h","False","5"\n'}
            # as datasets/ ships T2D: one archive, attributes/ at its top level
            write(root / "gold/t2d-webtables/t2d.tar.gz", tgz({
                "classes_complete.csv": b"", "tables/a.csv": b"", "tables/b.csv": b"",
                **{f"attributes/{n}": t.encode() for n, t in attributes.items()}}))
            for n, t in attributes.items():  # and the same files unpacked
                write(root / "plain/t2d-webtables/attributes" / n, t)
            props = t2d_properties(root / "gold")
            self.assertEqual(props, {"zip code": dbo + "zipCode", "weight": dbo + "weight"})
            self.assertEqual(t2d_properties(root / "plain"), props)
            src = root / "silver.csv"
            write(src, "table_id,col_idx,class,class_id,data\n"
                       "t1,0,weight,4,70;80\nt1,1,zipCode,9,10115\nt1,2,height,3,1.8\n"
                       "t2,0,NaN,-1,x\nt2,1,ZIP_code,9,75001\n")
            out = root / "out.csv"
            counts = rename(src, out, props)
            rows = list(csv.reader(io.StringIO(out.read_text())))
            self.assertEqual(rows[1:], [
                ["t1", "0", dbo + "weight", "0", "70;80"],
                ["t1", "1", dbo + "zipCode", "1", "10115"],
                ["t1", "2", "NaN", "-1", "1.8"],  # two class-prefixed `height`s: no URI
                ["t2", "0", "NaN", "-1", "x"],
                ["t2", "1", dbo + "zipCode", "1", "75001"]])
            self.assertEqual(counts["labelled_columns"], 3)
            self.assertEqual(counts["labels_without_a_t2d_property"], ["height"])
            write(src, "a,b\n1,2\n")
            with self.assertRaises(SourceError) as e:
                rename(src, out, props)
            self.assertIn(str(src), str(e.exception))


class SilverSubsetsTest(unittest.TestCase):
    def test_subsets_are_nested_and_reach_their_size_in_labelled_columns(self):
        from silver_subsets import subsets
        rows = [[f"t{t}", str(c), "NaN" if c == 0 else "city", "3", "x"]
                for t in range(6) for c in range(3)]
        parts = subsets(rows, [3, 5])
        labelled = {k: sum(1 for r in v if r[2] != "NaN") for k, v in parts.items()}
        self.assertEqual(labelled, {"3": 4, "5": 6, "all": 12})
        tables = {k: [r[0] for r in v] for k, v in parts.items()}
        self.assertEqual(tables["3"], tables["5"][:len(tables["3"])])
        self.assertEqual(sorted(set(tables["all"])), [f"t{t}" for t in range(6)])


if __name__ == "__main__":
    unittest.main()
