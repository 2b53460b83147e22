//! `colswarm fine-tune`: a user's own types on the shipped model, the shipped namespaces'
//! answers unchanged, and one-line errors for bad labels files.

mod common;

use std::path::Path;

use common::{colswarm, root, stdout, windows_1252};

const SAMPLES: &str = "datasets/t2d-webtables/samples";
const SHIPPED: &str = "models/colswarm-small";

fn fine_tune(labels: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "fine-tune",
        "--tables",
        SAMPLES,
        "--labels",
        labels.to_str().unwrap(),
        "--namespace",
        "mine",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    colswarm(&args)
}

/// `annotate`'s JSON lines for `tables`, and the annotations of namespace `own` taken out of
/// them (per column, in order).
fn annotate_without(
    model: &str,
    tables: &str,
    own: &str,
) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let out = stdout(&colswarm(&["annotate", "--model", model, tables]));
    let mut taken = Vec::new();
    let mut rest = Vec::new();
    for line in out.lines() {
        let mut table: serde_json::Value = serde_json::from_str(line).unwrap();
        for column in table["columns"].as_array_mut().unwrap() {
            let types = column["types"].as_array_mut().unwrap();
            taken.extend(types.iter().filter(|t| t["namespace"] == own).cloned());
            types.retain(|t| t["namespace"] != own);
        }
        rest.push(table);
    }
    (rest, taken)
}

#[test]
fn a_fine_tuned_namespace_answers_and_the_shipped_ones_do_not_change() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mine");
    let labels = root().join("datasets/own-types/labels.csv");
    let printed = stdout(&fine_tune(&labels, &out, &[]));
    assert!(
        printed.contains("added namespace `mine`: 12 labels"),
        "{printed}"
    );
    assert!(out.join("namespaces/mine.safetensors").is_file());
    assert!(!dir.path().join("mine.partial").exists());

    // Every sample table: types, relations and router lines of the shipped namespaces alike.
    let (before, none) = annotate_without(SHIPPED, SAMPLES, "mine");
    assert!(none.is_empty());
    let (after, mine) = annotate_without(out.to_str().unwrap(), SAMPLES, "mine");
    assert_eq!(
        after, before,
        "the shipped namespaces answer exactly as before"
    );
    let columns: usize = before
        .iter()
        .map(|t| t["columns"].as_array().unwrap().len())
        .sum();
    assert_eq!(mine.len(), columns, "one `mine` annotation per column");
    // Columns it was shown, in the world-cities table: it fits them.
    let cities = before
        .iter()
        .position(|t| t["table"] == "77632062_0_2292892375652659825")
        .unwrap();
    let offset: usize = before[..cities]
        .iter()
        .map(|t| t["columns"].as_array().unwrap().len())
        .sum();
    let best = |i: usize| {
        mine[offset + i]["top_k"][0]["label"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(best(1), "place", "city");
    assert_eq!(best(5), "person", "mayor");

    // The same command and seed give the same head, bit for bit.
    let again = dir.path().join("again");
    stdout(&fine_tune(&labels, &again, &[]));
    for file in [
        "namespaces/mine.safetensors",
        "namespaces/mine.ngrams.safetensors",
    ] {
        let bytes = |d: &Path| std::fs::read(d.join(file)).unwrap();
        assert_eq!(bytes(&out), bytes(&again), "{file}");
    }

    // A namespace the model already has is refused, and `--out` must be new.
    let taken = colswarm(&[
        "fine-tune",
        "--model",
        out.to_str().unwrap(),
        "--tables",
        SAMPLES,
        "--labels",
        labels.to_str().unwrap(),
        "--namespace",
        "gittables",
        "--out",
        dir.path().join("x").to_str().unwrap(),
    ]);
    let message = String::from_utf8_lossy(&taken.stderr);
    assert!(
        message.contains("already has a namespace `gittables`"),
        "{message}"
    );
    let exists = fine_tune(&labels, &out, &[]);
    let message = String::from_utf8_lossy(&exists.stderr);
    assert!(message.contains("exists and is not empty"), "{message}");
}

#[test]
fn bad_labels_files_get_one_line_errors_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let table = "77632062_0_2292892375652659825.csv";
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "missing-table",
            format!("table,column,label\n{table},city,place\nnope.csv,0,x\n").into_bytes(),
            "line 3: no table file",
        ),
        (
            "missing-column",
            format!("table,column,label\n{table},town,place\n").into_bytes(),
            "line 2: table `77632062_0_2292892375652659825.csv`: no column `town`",
        ),
        (
            "empty",
            b"table,column,label\n".to_vec(),
            "no labelled column",
        ),
        (
            "utf16",
            "table,column,label\n"
                .encode_utf16()
                .flat_map(u16::to_le_bytes)
                .fold(vec![0xFF, 0xFE], |mut v, b| {
                    v.push(b);
                    v
                }),
            "UTF-16",
        ),
    ];
    for (name, text, expected) in cases {
        let labels = dir.path().join(format!("{name}.csv"));
        std::fs::write(&labels, text).unwrap();
        let out = dir.path().join(name);
        let run = fine_tune(&labels, &out, &[]);
        assert!(!run.status.success(), "{name} was accepted");
        let message = String::from_utf8_lossy(&run.stderr);
        let lines: Vec<&str> = message.lines().collect();
        assert_eq!(lines.len(), 1, "{name}: {message}");
        assert!(
            message.contains(&format!("{name}.csv")),
            "{name}: {message}"
        );
        assert!(message.contains(expected), "{name}: {message}");
        assert!(!out.exists(), "{name}: something was written");
    }
}

#[test]
fn a_windows_1252_labels_set_is_scored_as_its_utf8_twin() {
    let dir = tempfile::tempdir().unwrap();
    let (utf8, cp1252) = (dir.path().join("utf8"), dir.path().join("cp1252"));
    for folder in [&utf8, &cp1252] {
        std::fs::create_dir(folder).unwrap();
    }
    for entry in std::fs::read_dir(root().join(SAMPLES)).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap();
        std::fs::write(utf8.join(name), &text).unwrap();
        std::fs::write(cp1252.join(name), windows_1252(&text)).unwrap();
    }
    // The labels name headers such as `fläche-(km²)`; one label is accented too.
    let labels = std::fs::read_to_string(root().join("datasets/own-types/labels.csv"))
        .unwrap()
        .replace(",region\n", ",région\n");
    assert!(labels.contains("région"));
    std::fs::write(utf8.join("labels.csv"), &labels).unwrap();
    std::fs::write(cp1252.join("labels.csv"), windows_1252(&labels)).unwrap();
    let path = |p: &Path| p.to_str().unwrap().to_string();

    let model = dir.path().join("model");
    let tuned = colswarm(&[
        "fine-tune",
        "--tables",
        &path(&utf8),
        "--labels",
        &path(&utf8.join("labels.csv")),
        "--namespace",
        "mine",
        "--out",
        &path(&model),
        "--max-steps",
        "20",
        "--quiet",
    ]);
    stdout(&tuned);
    // The same set read with `auto` says which tables held Windows-1252 cells.
    let auto = colswarm(&[
        "fine-tune",
        "--tables",
        &path(&cp1252),
        "--labels",
        &path(&cp1252.join("labels.csv")),
        "--encoding",
        "auto",
        "--namespace",
        "mine",
        "--out",
        &path(&dir.path().join("auto")),
        "--max-steps",
        "1",
        "--quiet",
    ]);
    stdout(&auto);
    let notes = String::from_utf8_lossy(&auto.stderr);
    let noted: Vec<&str> = notes
        .lines()
        .filter(|line| line.contains("read as Windows-1252"))
        .filter_map(|line| line.split_once(": ").map(|(file, _)| file))
        .collect();
    assert!(!noted.is_empty(), "{notes}");
    for file in noted {
        let bytes = std::fs::read(file).unwrap();
        assert!(bytes.iter().any(|&b| b >= 0x80), "{file} is ASCII: {notes}");
        assert!(file.ends_with(".csv"), "{notes}");
    }

    let eval = |folder: &Path, extra: &[&str]| {
        let (folder, labels) = (path(folder), path(&folder.join("labels.csv")));
        let mut args = vec![
            "eval",
            "--model",
            model.to_str().unwrap(),
            "--format",
            "labels",
            "--input",
            &folder,
            "--input",
            &labels,
            "--namespace",
            "mine",
            "--json",
        ];
        args.extend_from_slice(extra);
        colswarm(&args)
    };
    let report = |out: &std::process::Output| {
        let value: serde_json::Value = serde_json::from_str(&stdout(out)).unwrap();
        (
            value["micro_f1"].clone(),
            value["n_columns"].clone(),
            value["per_label"].clone(),
        )
    };
    let plain = report(&eval(&utf8, &[]));
    assert_eq!(plain.1, 32, "every labelled column is scored");
    assert!(plain.2.to_string().contains("région"), "{}", plain.2);
    let encoded = report(&eval(&cp1252, &["--encoding", "windows-1252"]));
    assert_eq!(encoded, plain);
    // Read as UTF-8, the same bytes are refused with the file and line, not misread.
    let refused = eval(&cp1252, &[]);
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains(".csv: line"), "{message}");
    assert!(message.contains("UTF-8"), "{message}");
    // An encoding asked of a benchmark's format is refused before any model is read.
    let refused = colswarm(&[
        "eval",
        "--model",
        "no-such-model",
        "--format",
        "t2d",
        "--input",
        "t2d.tar.gz",
        "--encoding",
        "windows-1252",
    ]);
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("for the `labels` format"), "{message}");
    assert!(!message.contains("no-such-model"), "{message}");

    // `baseline` reads a labels set's encoding from its spec.
    let baseline = |spec: String| {
        let out = colswarm(&[
            "baseline",
            "--kind",
            "char-ngram",
            "--train",
            &spec,
            "--eval",
            &spec,
            "--json",
        ]);
        let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        (value["micro_f1"].clone(), value["per_label"].clone())
    };
    let plain = baseline(format!(
        "mine=labels:{},{}/labels.csv",
        path(&utf8),
        path(&utf8)
    ));
    let encoded = baseline(format!(
        "mine=labels;encoding=windows-1252:{},{}/labels.csv",
        path(&cp1252),
        path(&cp1252)
    ));
    assert!(plain.1.to_string().contains("région"), "{}", plain.1);
    assert_eq!(encoded, plain);
}
