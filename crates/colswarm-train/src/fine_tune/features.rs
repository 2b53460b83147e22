//! The labelled columns' features: the frozen model reads every table once; each labelled
//! column's features are its column representation beside the model's CTA logits, and its
//! n-gram bag. Cached in the run's staging folder for an interrupted run.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use colswarm_model::{Columns, Example, LABELS_FILE, Model, Progress, rows_of};
use colswarm_rwkv::checkpoint::write_atomically;
use colswarm_swarm::manifest::LEGACY_EXPERTS_FILE;
use colswarm_tables::{SparseFeatures, Table, fnv1a};
use serde::{Deserialize, Serialize};

use super::config::FineTuneConfig;
use crate::error::TrainError;

/// One labelled column's features and labels (positions in the label list).
pub(super) struct Targets {
    /// `[columns, width]`, row-major.
    pub(super) features: Vec<f32>,
    pub(super) width: usize,
    /// Each column's labels, as positions in the namespace's label list.
    pub(super) labels: Vec<Vec<usize>>,
    /// Each column's table id.
    pub(super) tables: Vec<String>,
    /// Labelled columns past the columns the model reads.
    pub(super) skipped: usize,
    /// Each column's n-gram bag as the model reads it (empty without n-grams).
    pub(super) bags: Vec<SparseFeatures>,
}

/// Every labelled column's features, the model reading alone.
pub(super) fn extract(
    model: &Model,
    tables: &[Table],
    labels: &[String],
    config: &FineTuneConfig,
) -> Result<Targets, TrainError> {
    let index: HashMap<&str, usize> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| (l.as_str(), i))
        .collect();
    let mut targets = Targets {
        features: Vec::new(),
        width: 0,
        labels: Vec::new(),
        tables: Vec::new(),
        skipped: 0,
        bags: Vec::new(),
    };
    let mut progress = Progress::new("features", tables.len(), config.progress);
    let mut done = 0;
    for chunk in colswarm_model::passes(tables, config.batch_size) {
        let examples: Vec<Example> = model.encode(chunk, Columns::All);
        let refs: Vec<&Example> = examples.iter().collect();
        let rows = rows_of(model.column_features(&refs)?);
        let mut row = 0;
        for (table, example) in chunk.iter().zip(&examples) {
            let read: BTreeSet<usize> = example.columns.iter().copied().collect();
            targets.skipped += table
                .columns
                .iter()
                .enumerate()
                .filter(|(c, column)| !column.labels.is_empty() && !read.contains(c))
                .count();
            for (q, &c) in example.columns.iter().enumerate() {
                let features = &rows[row];
                row += 1;
                let column = &table.columns[c];
                if column.labels.is_empty() {
                    continue;
                }
                targets.width = features.len();
                targets.features.extend_from_slice(features);
                targets
                    .labels
                    .push(column.labels.iter().map(|l| index[l.as_str()]).collect());
                targets.tables.push(table.id.clone());
                targets
                    .bags
                    .push(example.ngrams.get(q).cloned().unwrap_or_default());
            }
        }
        done += chunk.len();
        progress.set(done, "tables");
    }
    progress.finish(&format!("{} labelled columns", targets.labels.len()));
    if targets.labels.is_empty() {
        return Err(TrainError::Config(
            "no labelled column is among the columns the model reads".into(),
        ));
    }
    Ok(targets)
}

pub(super) const FEATURES_FILE: &str = "features.f32";
pub(super) const FEATURES_KEY_FILE: &str = "features.json";

#[derive(Serialize, Deserialize, PartialEq)]
pub(super) struct FeaturesKey {
    /// Hash of the model's files and the labelled tables.
    key: String,
    width: usize,
    labels: Vec<Vec<usize>>,
    tables: Vec<String>,
    skipped: usize,
    bags: Vec<SparseFeatures>,
}

/// What the cached features were extracted from: the model (its manifest and label space,
/// which name every weight file's checksum) and every table's id, cells and labels.
pub(super) fn features_key(
    model_dir: &Path,
    tables: &[Table],
    labels: &[String],
) -> Result<String, TrainError> {
    let mut bytes = Vec::new();
    // (A v2 directory lists its experts in a second file.)
    for file in [
        "swarm.json",
        LABELS_FILE,
        LEGACY_EXPERTS_FILE,
        "serialize.json",
    ] {
        if let Ok(content) = std::fs::read(model_dir.join(file)) {
            bytes.extend(content);
        }
    }
    for table in tables {
        bytes.extend(table.id.as_bytes());
        for column in &table.columns {
            bytes.extend(column.header.as_deref().unwrap_or("\u{1}").as_bytes());
            for cell in &column.cells {
                bytes.extend(cell.text().as_bytes());
                bytes.push(0);
            }
            for label in &column.labels {
                bytes.extend(label.as_bytes());
                bytes.push(1);
            }
        }
    }
    bytes.extend(labels.join("\u{2}").as_bytes());
    Ok(format!("{:016x}-{}", fnv1a(&bytes), bytes.len()))
}

pub(super) fn save_features(
    staging: &Path,
    key: &str,
    targets: &Targets,
) -> Result<(), TrainError> {
    let bytes: Vec<u8> = targets
        .features
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    write_atomically(&staging.join(FEATURES_FILE), &bytes)?;
    let meta = FeaturesKey {
        key: key.to_string(),
        width: targets.width,
        labels: targets.labels.clone(),
        tables: targets.tables.clone(),
        skipped: targets.skipped,
        bags: targets.bags.clone(),
    };
    let json = serde_json::to_vec(&meta).map_err(|e| TrainError::Config(e.to_string()))?;
    write_atomically(&staging.join(FEATURES_KEY_FILE), &json)?;
    Ok(())
}

pub(super) fn load_features(staging: &Path, key: &str) -> Option<Targets> {
    let meta: FeaturesKey =
        serde_json::from_slice(&std::fs::read(staging.join(FEATURES_KEY_FILE)).ok()?).ok()?;
    let bytes = std::fs::read(staging.join(FEATURES_FILE)).ok()?;
    if meta.key != key || bytes.len() != 4 * meta.width * meta.labels.len() {
        return None;
    }
    let features = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Some(Targets {
        features,
        width: meta.width,
        labels: meta.labels,
        tables: meta.tables,
        skipped: meta.skipped,
        bags: meta.bags,
    })
}

/// Per feature: the mean, and one over the deviation (0 for a constant feature).
pub(super) fn standardisation(features: &[f32], width: usize) -> (Vec<f32>, Vec<f32>) {
    let n = (features.len() / width.max(1)).max(1) as f64;
    let mut mean = vec![0f64; width];
    for row in features.chunks(width) {
        for (m, &v) in mean.iter_mut().zip(row) {
            *m += f64::from(v);
        }
    }
    mean.iter_mut().for_each(|m| *m /= n);
    let mut var = vec![0f64; width];
    for row in features.chunks(width) {
        for ((s, &v), m) in var.iter_mut().zip(row).zip(&mean) {
            *s += (f64::from(v) - m).powi(2);
        }
    }
    let scale = var
        .iter()
        .map(|s| {
            let sd = (s / n).sqrt();
            if sd > 1e-6 { (1.0 / sd) as f32 } else { 0.0 }
        })
        .collect();
    (mean.iter().map(|&m| m as f32).collect(), scale)
}

pub(super) fn standardise(features: &[f32], shift: &[f32], scale: &[f32]) -> Vec<f32> {
    features
        .chunks(shift.len().max(1))
        .flat_map(|row| {
            row.iter()
                .zip(shift)
                .zip(scale)
                .map(|((v, s), k)| (v - s) * k)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standardised_features_have_zero_mean_and_unit_deviation() {
        let features = [1.0, 5.0, 3.0, 5.0, 5.0, 5.0];
        let (shift, scale) = standardisation(&features, 2);
        assert_eq!(shift, [3.0, 5.0]);
        assert!((scale[0] - 1.0 / (8.0f32 / 3.0).sqrt()).abs() < 1e-6);
        assert_eq!(scale[1], 0.0, "a constant feature is switched off");
        let z = standardise(&features, &shift, &scale);
        let mean: f32 = z.iter().step_by(2).sum::<f32>() / 3.0;
        assert!(mean.abs() < 1e-6);
    }
}
