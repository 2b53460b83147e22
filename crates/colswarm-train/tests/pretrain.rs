//! `pretrain` on tiny corpora written here: each objective learns, a resumed run equals an
//! uninterrupted one, and a corrupt corpus file gets an error naming it.

use std::path::Path;

use colswarm_train::{
    Objective, PretrainConfig, PretrainOptions, REPORT_FILE, SPECIALIST_FILE, pretrain,
};
use safetensors::{Dtype, tensor::TensorView};

const DIM: usize = 8;

/// Three kinds of strings a tiny model can tell apart.
fn kinds() -> Vec<(&'static str, Vec<String>)> {
    vec![
        (
            "city",
            (0..80)
                .map(|i| {
                    format!("Porto{}", ["ville", "burg", "stad", "ton"][i % 4]) + &"a".repeat(i % 5)
                })
                .collect(),
        ),
        (
            "code",
            (0..80)
                .map(|i| {
                    format!(
                        "{}{}{}",
                        (b'A' + (i % 26) as u8) as char,
                        (b'K' + (i % 7) as u8) as char,
                        i % 10
                    )
                })
                .collect(),
        ),
        ("year", (0..80).map(|i| format!("{}", 1900 + i)).collect()),
    ]
}

/// The teacher's embedding of a string of kind `k`: a direction per kind, with a little of the
/// string's own.
fn embedding(kind: usize, text: &str) -> Vec<f32> {
    let h = text
        .bytes()
        .fold(7u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)));
    let mut v: Vec<f32> = (0..DIM)
        .map(|i| {
            if i == kind * 2 {
                1.0
            } else {
                0.15 * (((h >> i) & 3) as f32 - 1.5)
            }
        })
        .collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

/// Writes a corpus: gazetteers of the three kinds, tables whose columns are of those kinds
/// (headers named after them), and the teacher's embeddings of every string and header.
fn write_corpus(root: &Path) {
    let kinds = kinds();
    let gaz = root.join("gazetteers");
    std::fs::create_dir_all(&gaz).unwrap();
    let mut index = serde_json::Map::new();
    for (name, entries) in &kinds {
        std::fs::write(gaz.join(format!("{name}.txt")), entries.join("\n")).unwrap();
        index.insert(
            name.to_string(),
            serde_json::json!({"count": entries.len(), "ship": true}),
        );
    }
    std::fs::write(
        gaz.join("index.json"),
        serde_json::Value::Object(index).to_string(),
    )
    .unwrap();

    let tables = root.join("tables").join("tiny");
    std::fs::create_dir_all(&tables).unwrap();
    let mut table_index = Vec::new();
    let mut teacher: Vec<(String, Vec<f32>)> = Vec::new();
    for (k, (_, entries)) in kinds.iter().enumerate() {
        for e in entries {
            teacher.push((e.clone(), embedding(k, e)));
        }
    }
    let header_names = [
        ["town", "place", "municipality"],
        ["id", "key", "identifier"],
        ["year", "founded", "season"],
    ];
    for t in 0..24 {
        let order = [t % 3, (t + 1) % 3];
        let headers: Vec<&str> = order.iter().map(|&k| header_names[k][t % 3]).collect();
        let mut csv = headers.join(",") + "\n";
        for r in 0..12 {
            let row: Vec<&str> = order
                .iter()
                .map(|&k| kinds[k].1[(r * 7 + t) % 80].as_str())
                .collect();
            csv += &(row.join(",") + "\n");
        }
        let name = format!("t{t}");
        std::fs::write(tables.join(format!("{name}.csv")), csv).unwrap();
        table_index.push(serde_json::json!({
            "name": name, "source": "tiny", "ship": true, "path": format!("tables/tiny/{name}.csv"),
            "headers": headers,
        }));
    }
    for (k, names) in header_names.iter().enumerate() {
        for h in names {
            teacher.push((h.to_string(), embedding(k, h)));
        }
    }
    std::fs::write(
        root.join("tables").join("index.json"),
        serde_json::Value::Array(table_index).to_string(),
    )
    .unwrap();

    let dir = root.join("teacher");
    std::fs::create_dir_all(&dir).unwrap();
    let lines: String = teacher
        .iter()
        .map(|(t, _)| serde_json::json!({"text": t}).to_string() + "\n")
        .collect();
    std::fs::write(dir.join("strings.jsonl"), lines).unwrap();
    let bytes: Vec<u8> = teacher
        .iter()
        .flat_map(|(_, e)| e.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()))
        .collect();
    let view = TensorView::new(Dtype::F16, vec![teacher.len(), DIM], &bytes).unwrap();
    let file = safetensors::serialize([("embeddings", view)], None).unwrap();
    std::fs::write(dir.join("embeddings.safetensors"), file).unwrap();
}

fn config(objective: Objective, steps: usize) -> PretrainConfig {
    let mut c = PretrainConfig::new(objective);
    c.encoder.d_model = 32;
    c.encoder.n_layers = 1;
    c.encoder.head_size = 16;
    c.data.serialize.max_table_tokens = 64;
    c.data.serialize.max_rows = 4;
    c.data.serialize.max_cell_bytes = 12;
    c.optimizer.batch_size = 8;
    c.data.max_columns = 2;
    c.steps = steps;
    c.optimizer.learning_rate = 1e-2;
    c.optimizer.warmup_steps = 5;
    c.data.held_out_every = 4;
    c.data.eval_tables = 24;
    c.eval_every = 0;
    c.run.checkpoint_every = 10;
    c.run.log_every = 1;
    c
}

fn step_losses(run: &Path) -> Vec<f64> {
    std::fs::read_to_string(run.join("log.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event"] == "step")
        .map(|v| v["loss"].as_f64().unwrap())
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn every_objective_lowers_its_loss_and_writes_a_loadable_specialist() {
    let corpus = tempfile::tempdir().unwrap();
    write_corpus(corpus.path());
    for objective in Objective::ALL {
        let out = tempfile::tempdir().unwrap();
        let summary = pretrain(
            &config(objective, 60),
            corpus.path(),
            out.path(),
            &PretrainOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{objective:?}: {e}"));
        assert!(summary.finished);
        let losses = step_losses(out.path());
        assert_eq!(losses.len(), 60);
        let (first, last) = (mean(&losses[..10]), mean(&losses[50..]));
        assert!(
            last < 0.8 * first,
            "{objective:?}: loss {first:.4} → {last:.4}"
        );
        let score = summary.score.unwrap();
        match objective {
            Objective::Gazetteer => assert!(score.accuracy.unwrap() > 0.6, "{score:?}"),
            Objective::Distill | Objective::Header => {
                assert!(
                    score.cosine.unwrap() > score.cosine_of_mean.unwrap(),
                    "{score:?}"
                )
            }
        }
        if objective == Objective::Header {
            assert!(score.header_top1.is_some() && score.header_candidates.unwrap() > 1);
        }
        // The specialist is an RWKV-7 checkpoint the swarm loads.
        let specialist = colswarm_swarm::FrozenSpecialist::load(
            "k",
            &out.path().join(SPECIALIST_FILE),
            &burn::tensor::Device::flex(),
        )
        .unwrap();
        assert_eq!(specialist.config().d_model, 32);
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.path().join(REPORT_FILE)).unwrap()).unwrap();
        assert_eq!(report["steps"], 60);
    }
}

#[test]
fn a_resumed_run_equals_an_uninterrupted_one() {
    let corpus = tempfile::tempdir().unwrap();
    write_corpus(corpus.path());
    for objective in Objective::ALL {
        let whole = tempfile::tempdir().unwrap();
        let config = config(objective, 25);
        pretrain(
            &config,
            corpus.path(),
            whole.path(),
            &PretrainOptions::default(),
        )
        .unwrap();
        let parts = tempfile::tempdir().unwrap();
        let stop = PretrainOptions {
            stop_after_steps: Some(12),
            ..PretrainOptions::default()
        };
        let first = pretrain(&config, corpus.path(), parts.path(), &stop).unwrap();
        assert!(!first.finished && first.steps == 12);
        assert!(!parts.path().join(SPECIALIST_FILE).exists());
        pretrain(
            &config,
            corpus.path(),
            parts.path(),
            &PretrainOptions::default(),
        )
        .unwrap();
        let read = |dir: &Path| std::fs::read(dir.join(SPECIALIST_FILE)).unwrap();
        assert!(
            read(whole.path()) == read(parts.path()),
            "{objective:?}: weights differ"
        );
        assert_eq!(step_losses(whole.path()), step_losses(parts.path()));
        // Running a finished run again changes nothing and reports its score.
        let log = std::fs::read(whole.path().join("log.jsonl")).unwrap();
        let again = pretrain(
            &config,
            corpus.path(),
            whole.path(),
            &PretrainOptions::default(),
        )
        .unwrap();
        assert!(again.finished && again.score.is_some());
        assert_eq!(std::fs::read(whole.path().join("log.jsonl")).unwrap(), log);
        // Another seed trains another model.
        let mut other = config.clone();
        other.run.seed = 1;
        let third = tempfile::tempdir().unwrap();
        pretrain(
            &other,
            corpus.path(),
            third.path(),
            &PretrainOptions::default(),
        )
        .unwrap();
        assert!(read(third.path()) != read(whole.path()));
    }
}

fn error_of(corpus: &Path, objective: Objective) -> String {
    let out = tempfile::tempdir().unwrap();
    pretrain(
        &config(objective, 2),
        corpus,
        out.path(),
        &PretrainOptions::default(),
    )
    .unwrap_err()
    .to_string()
}

/// Damages a corpus written by [`write_corpus`].
type Corruption = Box<dyn Fn(&Path)>;

#[test]
fn corrupt_corpus_files_get_errors_naming_them() {
    let cases: Vec<(&str, Corruption, Objective, Vec<&str>)> = vec![
        (
            "gazetteer index",
            Box::new(|r: &Path| {
                std::fs::write(r.join("gazetteers/index.json"), "{not json").unwrap()
            }),
            Objective::Gazetteer,
            vec!["gazetteers/index.json", "invalid JSON"],
        ),
        (
            "missing gazetteer",
            Box::new(|r: &Path| std::fs::remove_file(r.join("gazetteers/code.txt")).unwrap()),
            Objective::Gazetteer,
            vec!["gazetteers/code.txt"],
        ),
        (
            "teacher strings",
            Box::new(|r: &Path| {
                let p = r.join("teacher/strings.jsonl");
                let text = std::fs::read_to_string(&p)
                    .unwrap()
                    .replacen('\n', "\n{oops\n", 1);
                std::fs::write(p, text).unwrap();
            }),
            Objective::Distill,
            vec!["teacher/strings.jsonl", "line 2"],
        ),
        (
            "embeddings",
            Box::new(|r: &Path| {
                std::fs::write(r.join("teacher/embeddings.safetensors"), b"garbage").unwrap()
            }),
            Objective::Header,
            vec!["teacher/embeddings.safetensors", "not a safetensors file"],
        ),
        (
            "embedding rows",
            Box::new(|r: &Path| {
                let p = r.join("teacher/strings.jsonl");
                let text = std::fs::read_to_string(&p).unwrap() + "{\"text\": \"extra\"}\n";
                std::fs::write(p, text).unwrap();
            }),
            Objective::Distill,
            vec!["teacher/embeddings.safetensors", "rows"],
        ),
        (
            "table",
            Box::new(|r: &Path| {
                std::fs::write(r.join("tables/tiny/t3.csv"), "a,b\n1,2,3,4\n\"open").unwrap()
            }),
            Objective::Header,
            vec!["tables/tiny/t3.csv"],
        ),
    ];
    for (name, corrupt, objective, expected) in cases {
        let corpus = tempfile::tempdir().unwrap();
        write_corpus(corpus.path());
        corrupt(corpus.path());
        let message = error_of(corpus.path(), objective);
        for part in expected {
            assert!(message.contains(part), "{name}: `{part}` not in: {message}");
        }
    }
    // A corpus without what the objective needs says so.
    let empty = tempfile::tempdir().unwrap();
    let message = error_of(empty.path(), Objective::Distill);
    assert!(message.contains("teacher"), "{message}");
}
