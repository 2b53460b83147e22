//! The evaluation scripts on tiny inputs: `scripts/evaluate-peers.sh` runs every peer on every
//! benchmark's folds and writes its tables. The real data is cut down to a few tables per set
//! (the script reads `$DATASETS`), so this checks the script end to end in seconds, not its
//! numbers.

mod common;

use std::process::Command;

use common::root;

#[test]
fn evaluate_peers_writes_a_table_per_benchmark_on_tiny_data() {
    let work = tempfile::tempdir().unwrap();
    let tiny = work.path().join("datasets");
    let out = work.path().join("peers");
    // A few tables of each set, in the repository's layout and compression.
    let build = r#"
set -euo pipefail
src=datasets
w=$TINY/wikitables-turl-subset; mkdir -p "$w"
for f in train_wikitables_subset_20 dev_wikitables_subset_2; do
  zcat "$src/wikitables-turl-subset/$f.csv.gz" | python3 -c '
import csv, sys
csv.field_size_limit(1 << 30)
rows = list(csv.reader(sys.stdin))
csv.writer(sys.stdout).writerows(rows[:60])' | gzip > "$w/$f.csv.gz"
done
cp "$src"/wikitables-turl-subset/*.txt "$src"/wikitables-turl-subset/*.json "$w/"
g=$TINY/gittables-semtab22/gt-semtab22-dbpedia-all; mkdir -p "$g"
for k in 0 1 2 3; do
  # (head would close the pipe early, which pipefail counts as a failure of zcat)
  python3 -c 'import gzip, sys; lines = gzip.open(sys.argv[1], "rt").readlines()[:400]; gzip.open(sys.argv[2], "wt").writelines(lines)' \
    "$src/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_$k.csv.gz" "$g/db_semi1_cv_$k.csv.gz"
done
t=$TINY/t2d-webtables; mkdir -p "$t/x"
tar -C "$t/x" -xzf "$src/t2d-webtables/t2d.tar.gz"
ls "$t/x/attributes" | tail -n +81 | while read -r f; do rm "$t/x/attributes/$f" "$t/x/tables/$f"; done
tar -C "$t/x" -czf "$t/t2d.tar.gz" classes_complete.csv attributes tables
rm -rf "$t/x"
"#;
    let built = Command::new("bash")
        .args(["-c", build])
        .env("TINY", &tiny)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "building the tiny data sets: {}",
        String::from_utf8_lossy(&built.stderr)
    );

    let run = Command::new("bash")
        .arg("scripts/evaluate-peers.sh")
        .arg(&out)
        .env("BIN", env!("CARGO_BIN_EXE_colswarm"))
        .env("DATASETS", &tiny)
        .current_dir(root())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let tables = std::fs::read_to_string(out.join("peers.md")).unwrap();
    for set in [
        "### wikitables cta",
        "### gittables cta",
        "### t2d cta",
        "### t2d cpa",
    ] {
        let section = tables
            .split("\n### ")
            .find(|s| s.starts_with(&set[4..]))
            .unwrap_or_else(|| panic!("no `{set}` in\n{tables}"));
        // Every peer has a row and one of them is marked best.
        for peer in ["majority", "header-rule", "header-memory", "char-ngram"] {
            assert!(
                section.contains(&format!("| {peer}")) || section.contains(&format!("| **{peer}")),
                "{set}: no {peer}\n{section}"
            );
        }
        assert_eq!(section.matches("| best |").count(), 1, "{section}");
    }
    // Where the shipped model stores a label-name prior, its peer is scored at that weight.
    assert!(tables.contains("char-ngram-prior (weight 12"), "{tables}");
}
