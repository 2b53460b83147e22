//! [`Annotator`]: a loaded model, ready to annotate tables from any number of threads.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::tensor::Device;
use colswarm_tables::Table;
use colswarm_train::TrainError;
use colswarm_train::predict::{AnnotateOptions, Model, TableAnnotation};

/// Configures and loads an [`Annotator`].
#[derive(Clone, Debug)]
pub struct AnnotatorBuilder {
    model_dir: PathBuf,
    options: AnnotateOptions,
    device: Device,
}

impl AnnotatorBuilder {
    /// How many labels each column's `top_k` lists (default 3).
    pub fn top_k(mut self, k: usize) -> Self {
        self.options.top_k = k;
        self
    }

    /// Tables per forward pass (default 16).
    pub fn batch_size(mut self, tables: usize) -> Self {
        self.options.batch_size = tables.max(1);
        self
    }

    /// Run the primary alone, never the specialists (default: the router decides).
    pub fn without_specialists(mut self) -> Self {
        self.options.use_specialists = false;
        self
    }

    /// Report only these CTA namespaces (default: all the model has).
    pub fn namespaces<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.options.cta_namespaces = names.into_iter().map(Into::into).collect();
        self
    }

    /// The device to run on (default `Device::flex()`, the CPU backend).
    pub fn device(mut self, device: Device) -> Self {
        self.device = device;
        self
    }

    /// Loads the model directory, verifying every file's checksum.
    pub fn build(self) -> Result<Annotator, TrainError> {
        let model = Model::load(&self.model_dir, &self.device)?;
        Ok(Annotator {
            model: Arc::new(model),
            options: self.options,
        })
    }
}

/// A trained model directory (`colswarm train` / `train-router` output, or `models/…`) ready to
/// annotate tables. Cloning is cheap (the weights are shared) and it is `Send + Sync`.
#[derive(Clone, Debug)]
pub struct Annotator {
    model: Arc<Model>,
    options: AnnotateOptions,
}

impl Annotator {
    /// Starts configuring an annotator for the model directory `dir`.
    pub fn builder(dir: impl AsRef<Path>) -> AnnotatorBuilder {
        AnnotatorBuilder {
            model_dir: dir.as_ref().to_path_buf(),
            options: AnnotateOptions::default(),
            device: Device::flex(),
        }
    }

    /// Annotates every column of one table.
    pub fn annotate(&self, table: &Table) -> Result<TableAnnotation, TrainError> {
        let mut all = self
            .model
            .annotate(std::slice::from_ref(table), &self.options)?;
        Ok(all.remove(0))
    }

    /// Annotates a batch of tables (one result per table, in order).
    pub fn annotate_all(&self, tables: &[Table]) -> Result<Vec<TableAnnotation>, TrainError> {
        self.model.annotate(tables, &self.options)
    }

    /// The loaded model (label space, specialists, serialization settings).
    pub fn model(&self) -> &Model {
        &self.model
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + Clone>() {}

    #[test]
    fn annotator_is_send_sync_and_clone() {
        assert_send_sync::<Annotator>();
    }

    #[test]
    fn threads_sharing_one_annotator_agree_with_a_single_thread() {
        let annotator = Annotator::builder(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/models/colswarm-small"
        ))
        .build()
        .unwrap();
        let tables: Vec<Table> = (0..4)
            .map(|i| {
                Table::from_rows(
                    format!("t{i}"),
                    Some(vec!["city".into(), "population".into()]),
                    vec![
                        vec![format!("Springfield {i}"), format!("{}", 1000 * i)],
                        vec!["Paris".into(), "2100000".into()],
                    ],
                )
            })
            .collect();
        let expected = annotator.annotate_all(&tables).unwrap();
        let from_threads: Vec<TableAnnotation> = std::thread::scope(|scope| {
            let handles: Vec<_> = tables
                .iter()
                .map(|table| {
                    let annotator = annotator.clone();
                    scope.spawn(move || annotator.annotate(table).unwrap())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(from_threads.len(), expected.len());
        for (a, b) in from_threads.iter().zip(&expected) {
            assert_eq!(a.table, b.table);
            assert_eq!(a.columns.len(), b.columns.len());
            for (x, y) in a.columns.iter().zip(&b.columns) {
                // Batching changes padding, not results: same labels, confidences within 1e-4.
                assert_eq!(x.types[0].labels[0].label, y.types[0].labels[0].label);
                let (p, q) = (
                    x.types[0].labels[0].confidence,
                    y.types[0].labels[0].confidence,
                );
                assert!((p - q).abs() < 1e-4, "{p} vs {q}");
            }
        }
    }

    #[test]
    fn a_missing_model_directory_is_named() {
        let err = Annotator::builder("no/such/model").build().unwrap_err();
        assert!(err.to_string().contains("no/such/model"), "{err}");
    }
}
