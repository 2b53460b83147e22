//! Word-vector features in the whole swarm: what they add, and how they are saved and loaded.

use std::sync::Arc;

use burn::tensor::Device;
use colswarm_rwkv::RwkvConfig;
use colswarm_swarm::{
    ColumnWordsConfig, LabelKind, OrchestratorConfig, Routing, Swarm, TableBatch, WordVectors,
};
use colswarm_testing::perturb;
use rand_chacha::ChaCha8Rng;

const D_MODEL: usize = 16;

fn config() -> OrchestratorConfig {
    let primary = RwkvConfig::new(64, D_MODEL, 2)
        .with_head_size(8)
        .with_d_ffn(Some(32))
        .with_decay_rank(Some(4))
        .with_icl_rank(Some(4))
        .with_value_rank(Some(4))
        .with_gate_rank(Some(4));
    OrchestratorConfig::new(primary, 5, LabelKind::SingleLabel, 0)
        .with_d_head_hidden(8)
        .with_column_words(Some(ColumnWordsConfig::new(3)))
}

fn vectors() -> Arc<WordVectors> {
    let words = ["paris", "lyon"].map(String::from).to_vec();
    Arc::new(WordVectors::new(words, vec![1.0, -0.5, 0.25, 0.0, 2.0, -1.0], 3).unwrap())
}

/// A swarm without specialists whose weights, the zero-initialised projection included, are
/// all moved off their initial values.
fn swarm(device: &Device) -> Swarm {
    let config = config();
    let orchestrator = perturb(config.init(&[], 3, device), 4, 0.3)
        .with_word_vectors(Some((config.column_words.unwrap(), vectors())), device)
        .unwrap();
    Swarm::new(orchestrator, Vec::new()).unwrap()
}

/// Two tables (two and one columns); column `c` of table `t` has features `t + c + k / 10`.
fn batch(with_words: bool) -> TableBatch {
    let words = |t: usize, n: usize| -> Vec<Vec<f32>> {
        (0..n)
            .map(|c| (0..6).map(|k| (t + c) as f32 + k as f32 / 10.0).collect())
            .collect()
    };
    TableBatch {
        tables: vec![vec![1, 2, 3, 4, 5], vec![6, 7, 8]],
        queries: vec![vec![vec![9, 10], vec![11]], vec![vec![12, 13]]],
        spans: vec![vec![0..2, 2..5], vec![0..3]],
        words: if with_words {
            vec![words(0, 2), words(1, 1)]
        } else {
            Vec::new()
        },
        ..TableBatch::default()
    }
}

fn columns(swarm: &Swarm, batch: &TableBatch) -> Vec<f32> {
    let out = swarm
        .forward(batch, Routing::<ChaCha8Rng>::Fixed(vec![vec![]; 2]))
        .unwrap();
    out.columns.into_data().try_to_vec::<f32>().unwrap()
}

#[test]
fn word_features_add_their_projection_and_round_trip() {
    let device = Device::flex();
    let s = swarm(&device);
    let batch = batch(true);
    let with = columns(&s, &batch);

    // Independently: the same weights without word vectors, plus features × weight by hand.
    let weight: Vec<f32> = s
        .orchestrator
        .words
        .as_ref()
        .unwrap()
        .weight
        .val()
        .into_data()
        .try_to_vec()
        .unwrap();
    assert!(weight.iter().any(|&w| w != 0.0), "perturbed");
    let plain = Swarm::new(
        s.orchestrator
            .clone()
            .with_word_vectors(None, &device)
            .unwrap(),
        Vec::new(),
    )
    .unwrap();
    let base = columns(&plain, &batch);
    let rows: Vec<&Vec<f32>> = batch.words.iter().flatten().collect();
    assert_eq!(rows.len() * D_MODEL, with.len());
    for (row, features) in rows.iter().enumerate() {
        for k in 0..D_MODEL {
            let added: f32 = features
                .iter()
                .enumerate()
                .map(|(i, x)| x * weight[i * D_MODEL + k])
                .sum();
            let (got, expected) = (with[row * D_MODEL + k], base[row * D_MODEL + k] + added);
            assert!(
                (got - expected).abs() <= 1e-4 * (1.0 + expected.abs()),
                "column row {row}, channel {k}: {got} vs {expected}"
            );
        }
    }

    // A batch without word features is refused.
    let error = s
        .forward(
            &self::batch(false),
            Routing::<ChaCha8Rng>::Fixed(vec![vec![]; 2]),
        )
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("word features for 0 of its 2 tables"),
        "{error}"
    );

    // The projection and the vectors are saved as files of their own and loaded back.
    let dir = std::env::temp_dir().join(format!("colswarm-swarm-words-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let labels: Vec<String> = (0..5).map(|i| format!("type{i}")).collect();
    let manifest = s.save(&dir, &config(), &labels, &[]).unwrap();
    let files = manifest.column_words.as_ref().unwrap();
    assert_eq!(files.projection.path, "column_words.safetensors");
    assert_eq!(files.vectors.path, "word_vectors.safetensors");
    let (back, _) = Swarm::load(&dir, &device).unwrap();
    let (loaded_config, loaded) = back.orchestrator.column_words().unwrap();
    assert_eq!(*loaded_config, config().column_words.unwrap());
    assert_eq!(loaded.get("lyon"), vectors().get("lyon"), "exact in f16");
    assert_eq!(columns(&back, &batch), with);

    // A changed vector file fails its checksum, naming it.
    let path = dir.join("word_vectors.safetensors");
    let original = std::fs::read(&path).unwrap();
    let mut changed = original.clone();
    *changed.last_mut().unwrap() ^= 1;
    std::fs::write(&path, &changed).unwrap();
    let error = Swarm::load(&dir, &device).unwrap_err().to_string();
    assert!(
        error.contains("word_vectors.safetensors") && error.contains("checksum mismatch"),
        "{error}"
    );
    std::fs::write(&path, &original).unwrap();

    // A manifest whose config reads word vectors but names no files for them is refused.
    let manifest_path = dir.join("swarm.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    json["column_words"] = serde_json::Value::Null;
    std::fs::write(&manifest_path, serde_json::to_vec(&json).unwrap()).unwrap();
    let error = Swarm::load(&dir, &device).unwrap_err().to_string();
    assert!(
        error.contains("reads word vectors but the manifest names no file"),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn vectors_of_another_dimension_are_refused() {
    let device = Device::flex();
    let config = config();
    let other = ColumnWordsConfig::new(4);
    let error = config
        .init(&[], 0, &device)
        .with_word_vectors(Some((other, vectors())), &device)
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("dimension 4 but the table's are 3"),
        "{error}"
    );
    // A model without its vectors attached cannot be saved.
    let unattached = Swarm::new(config.init(&[], 0, &device), Vec::new()).unwrap();
    let dir = std::env::temp_dir().join(format!("colswarm-words-none-{}", std::process::id()));
    let error = unattached.save(&dir, &config, &[], &[]).unwrap_err();
    assert!(error.to_string().contains("none are attached"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}
