//! The swarm's column representations: span pooling, column n-grams, column fusion.

use burn::tensor::{Device, Tensor, TensorData};
use colswarm_swarm::{
    ColumnNgramsConfig, FrozenSpecialist, FusionMode, Swarm, SwarmError, TableBatch,
    column_readings,
};

mod common;
use common::*;

/// A column representation's channel against its independently computed value.
fn assert_close(got: f32, expected: f32, row: usize, channel: usize) {
    assert!(
        (got - expected).abs() <= 1e-4 * (1.0 + expected.abs()),
        "column row {row}, channel {channel}: {got} vs {expected}"
    );
}

#[test]
fn span_pooling_adds_the_mean_hidden_state_of_each_columns_span() {
    let device = Device::flex();
    let specialists = vec![specialist("a", rwkv(16, 2, 8), 10)];
    let s = swarm_of(config(FusionMode::WeightedSum), &device, specialists);
    let batch = batch();
    let out = s.forward(&batch, fixed(vec![vec![false]; 2])).unwrap();
    let read = s.orchestrator.read_tables(&batch).unwrap();
    let answered = values(s.orchestrator.answer(&read.state, &batch));
    let columns = values(out.columns);

    // Independently: read each table alone (no padding) and average its span by hand.
    let d = 16;
    let mut row = 0;
    for (table, spans) in batch.tables.iter().zip(&batch.spans) {
        let tokens: Vec<i64> = table.iter().map(|&t| i64::from(t)).collect();
        let tokens = Tensor::<2, burn::tensor::Int>::from_data(
            TensorData::new(tokens, [1, table.len()]),
            &device,
        );
        let hidden = s.orchestrator.primary.forward(tokens, None, None).hidden;
        let hidden = hidden.into_data().try_to_vec::<f32>().unwrap();
        for span in spans {
            for k in 0..d {
                let mean = span.clone().map(|t| hidden[t * d + k]).sum::<f32>() / span.len() as f32;
                let expected = answered[row * d + k] + mean;
                assert_close(columns[row * d + k], expected, row, k);
            }
            row += 1;
        }
    }
    assert_eq!(row * d, columns.len());
}

#[test]
fn spans_must_match_the_queries_and_lie_in_the_table() {
    let specialists = vec![specialist("a", rwkv(16, 2, 8), 10)];
    let s = swarm(FusionMode::WeightedSum, &Device::flex(), specialists);
    let mut missing = batch();
    missing.spans[1].pop();
    let error = s
        .forward(&missing, fixed(vec![vec![false]; 2]))
        .unwrap_err();
    assert!(
        matches!(error, SwarmError::Input(ref m) if m.contains("column spans")),
        "{error}"
    );
    let mut past = batch();
    past.spans[0][1] = 10..99;
    let error = s.forward(&past, fixed(vec![vec![false]; 2])).unwrap_err();
    assert!(
        matches!(error, SwarmError::Input(ref m) if m.contains("past the table")),
        "{error}"
    );
}

/// `batch()` with n-gram bags: column `c` of table `t` holds buckets `t + c` and `7 c + 1`.
fn batch_with_ngrams(buckets: u32) -> TableBatch {
    let mut batch = batch();
    batch.ngrams = batch
        .queries
        .iter()
        .enumerate()
        .map(|(t, queries)| {
            (0..queries.len() as u32)
                .map(|c| vec![(t as u32 + c, 0.6), ((7 * c + 1) % buckets, 0.8)])
                .collect()
        })
        .collect();
    batch
}

#[test]
fn column_ngrams_add_their_embedding_and_round_trip() {
    let device = Device::flex();
    let specialists = vec![specialist("a", rwkv(16, 2, 8), 10)];
    let buckets = 32;
    let ngram_config = config(FusionMode::WeightedSum)
        .with_column_ngrams(Some(ColumnNgramsConfig::new().with_buckets(buckets)));
    // `perturb` moves every weight, the zero-initialised embedding included.
    let s = swarm_of(ngram_config.clone(), &device, specialists);
    let with_bags = batch_with_ngrams(buckets);
    let columns = values(
        s.forward(&with_bags, fixed(vec![vec![true]; 2]))
            .unwrap()
            .columns,
    );

    // Independently: the same weights without the embedding, plus the weighted rows by hand.
    let embedding = values(s.orchestrator.ngrams.as_ref().unwrap().weight.val());
    let without = Swarm::new(
        s.orchestrator.clone().with_column_ngrams(None, &device),
        s.specialists.clone(),
    )
    .unwrap();
    let base = values(
        without
            .forward(&with_bags, fixed(vec![vec![true]; 2]))
            .unwrap()
            .columns,
    );
    let d = 16;
    let bags: Vec<&Vec<(u32, f32)>> = with_bags.ngrams.iter().flatten().collect();
    assert_eq!(bags.len() * d, columns.len());
    for (row, bag) in bags.iter().enumerate() {
        for k in 0..d {
            let added: f32 = bag
                .iter()
                .map(|&(b, w)| w * embedding[b as usize * d + k])
                .sum();
            let expected = base[row * d + k] + added;
            let got = columns[row * d + k];
            assert!(
                (got - expected).abs() <= 1e-4 * (1.0 + expected.abs()),
                "column row {row}, channel {k}: {got} vs {expected}"
            );
        }
    }

    // A batch without bags, or with a bucket past the embedding, is refused.
    let error = s.forward(&batch(), fixed(vec![vec![true]; 2])).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("n-gram bags for 0 of its 2 tables"),
        "{error}"
    );
    let mut past = batch_with_ngrams(buckets);
    past.ngrams[1][2][0].0 = buckets;
    let error = s.forward(&past, fixed(vec![vec![true]; 2])).unwrap_err();
    assert!(
        error.to_string().contains("past the model's 32 buckets"),
        "{error}"
    );

    // The embedding is saved as its own component and loaded back.
    let dir = std::env::temp_dir().join(format!("colswarm-swarm-ngrams-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let labels: Vec<String> = (0..5).map(|i| format!("type{i}")).collect();
    let manifest = s.save(&dir, &ngram_config, &labels, &[]).unwrap();
    assert_eq!(
        manifest.column_ngrams.as_ref().map(|f| f.path.as_str()),
        Some("column_ngrams.safetensors")
    );
    let (back, _) = Swarm::load(&dir, &device).unwrap();
    let again = back
        .forward(&with_bags, fixed(vec![vec![true]; 2]))
        .unwrap();
    assert_eq!(values(again.columns), columns);

    // A manifest whose config reads n-grams but names no embedding file is refused.
    let path = dir.join("swarm.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    json["column_ngrams"] = serde_json::Value::Null;
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let error = Swarm::load(&dir, &device).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("reads column n-grams but the manifest names no"),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn column_fusion_adds_exactly_the_mapped_readings_of_active_specialists() {
    let device = Device::flex();
    let specialists = vec![
        specialist("a", rwkv(16, 2, 8), 10),
        specialist("wide", rwkv(32, 3, 16), 11),
    ];
    let fused = swarm_of(
        config(FusionMode::WeightedSum).with_column_fusion(true),
        &device,
        specialists.clone(),
    );
    assert!(fused.orchestrator.has_column_fusion());
    // The same swarm without column maps: the state fusion alone.
    let mut plain = fused.clone();
    for alignment in &mut plain.orchestrator.alignments {
        alignment.column_map = None;
    }
    let active = vec![vec![true, false], vec![true, true]];
    let with = fused.forward(&batch(), fixed(active.clone())).unwrap();
    let without = plain.forward(&batch(), fixed(active.clone())).unwrap();
    let b = batch();
    let tables: Vec<&[u32]> = b.tables.iter().map(Vec::as_slice).collect();
    let mut expected = values(without.columns);
    for (i, s) in specialists.iter().enumerate() {
        let readings = column_readings(s.model(), &tables, &b.spans, &device);
        let map = fused.orchestrator.alignments[i]
            .column_map
            .as_ref()
            .unwrap()
            .val();
        let mapped = values(readings.matmul(map));
        for (row, &(table, _)) in b.column_rows().iter().enumerate() {
            if active[table][i] {
                for (k, e) in expected[row * 16..(row + 1) * 16].iter_mut().enumerate() {
                    *e += mapped[row * 16 + k];
                }
            }
        }
    }
    for (row, (got, want)) in values(with.columns)
        .chunks(16)
        .zip(expected.chunks(16))
        .enumerate()
    {
        for (k, (g, w)) in got.iter().zip(want).enumerate() {
            assert_close(*g, *w, row, k);
        }
    }
    // All off is still exactly the primary alone.
    let off = fused
        .forward(&batch(), fixed(vec![vec![false, false]; 2]))
        .unwrap();
    let read = fused.orchestrator.read_tables(&batch()).unwrap();
    let alone = fused.orchestrator.answer(&read.state, &batch()) + read.column_pooled;
    assert_eq!(values(off.columns), values(alone));

    // A fresh column map starts at zero: the answers are those without column fusion.
    let shapes: Vec<_> = specialists
        .iter()
        .map(FrozenSpecialist::state_shape)
        .collect();
    let fresh = config(FusionMode::WeightedSum)
        .with_column_fusion(true)
        .init(&shapes, 3, &device);
    let fresh_plain = config(FusionMode::WeightedSum).init(&shapes, 3, &device);
    let all = fixed(vec![vec![true, true]; 2]);
    let x = Swarm::new(fresh, specialists.clone())
        .unwrap()
        .forward(&batch(), all)
        .unwrap();
    let all = fixed(vec![vec![true, true]; 2]);
    let y = Swarm::new(fresh_plain, specialists)
        .unwrap()
        .forward(&batch(), all)
        .unwrap();
    assert_eq!(values(x.cta_logits), values(y.cta_logits));
}

#[test]
fn column_maps_learn_and_round_trip() {
    let device = Device::flex().autodiff();
    let cfg = config(FusionMode::Gated).with_column_fusion(true);
    let s = swarm_of(
        cfg.clone(),
        &device,
        vec![specialist("wide", rwkv(32, 3, 16), 12)],
    );
    let out = s.forward(&batch(), fixed(vec![vec![true]; 2])).unwrap();
    let grads = out.cta_logits.sum().backward();
    let map = s.orchestrator.alignments[0].column_map.as_ref().unwrap();
    let grad = map
        .val()
        .grad(&grads)
        .map(|g| g.abs().sum().into_scalar::<f32>());
    assert!(
        grad.is_some_and(|g| g > 0.0),
        "column map gradient {grad:?}"
    );

    let dir = std::env::temp_dir().join(format!("colswarm-column-fusion-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let labels: Vec<String> = (0..5).map(|i| format!("type{i}")).collect();
    s.save(&dir, &cfg, &labels, &[]).unwrap();
    let (back, manifest) = Swarm::load(&dir, &Device::flex()).unwrap();
    assert!(manifest.config.column_fusion);
    let active = vec![vec![true]; 2];
    let x = s.forward(&batch(), fixed(active.clone())).unwrap();
    let y = back.forward(&batch(), fixed(active)).unwrap();
    // Saved from an autodiff device, loaded on a plain one: equal to float rounding.
    for (row, (g, w)) in values(y.cta_logits)
        .iter()
        .zip(values(x.cta_logits))
        .enumerate()
    {
        assert_close(*g, w, row, 0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
