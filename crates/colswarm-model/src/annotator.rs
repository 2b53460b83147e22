//! [`Annotator`]: a loaded model, ready to annotate tables from any number of threads.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::tensor::Device;
use colswarm_rwkv::DeviceChoice;
use colswarm_tables::Table;
use serde::Serialize;

use crate::annotation::{AnnotateOptions, TableAnnotation};
use crate::encode::{Columns, Example, passes};
use crate::error::ModelError;
use crate::model::{Model, SpecialistUse, rows_of};

/// One table's column embeddings ([`Annotator::embed`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TableEmbedding {
    /// The table's id.
    pub table: String,
    /// The columns the model reads, in order.
    pub columns: Vec<ColumnEmbedding>,
}

/// One column's embedding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ColumnEmbedding {
    /// The column's index in its table.
    pub index: usize,
    /// Its header, if it has one.
    pub header: Option<String>,
    /// The primary's representation of the column: the vector the heads read.
    pub vector: Vec<f32>,
}

/// Configures and loads an [`Annotator`].
#[derive(Clone, Debug)]
pub struct AnnotatorBuilder {
    model_dir: PathBuf,
    options: AnnotateOptions,
    device: AnnotatorDevice,
    threads: usize,
}

/// Where an [`Annotator`] runs: an opened burn [`Device`], or a [`DeviceChoice`] (`cpu`,
/// `wgpu`, `cuda`, `auto`) that [`AnnotatorBuilder::build`] opens.
#[derive(Clone, Debug)]
pub enum AnnotatorDevice {
    /// A device opened by the caller.
    Device(Device),
    /// A device by name, opened when the annotator is built.
    Choice(DeviceChoice),
}

impl From<Device> for AnnotatorDevice {
    fn from(device: Device) -> Self {
        Self::Device(device)
    }
}

impl From<DeviceChoice> for AnnotatorDevice {
    fn from(choice: DeviceChoice) -> Self {
        Self::Choice(choice)
    }
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
    pub fn without_specialists(self) -> Self {
        self.specialists(SpecialistUse::Off)
    }

    /// Which specialists read the tables (default: [`SpecialistUse::Router`], those whose gate
    /// passes the router's threshold); [`SpecialistUse::All`] runs every one on every table,
    /// to measure the swarm's full cost.
    pub fn specialists(mut self, specialists: SpecialistUse) -> Self {
        self.options.specialists = specialists;
        self
    }

    /// Whether namespaces abstain below the thresholds the model stores (default `true`;
    /// `false` gives every column its best label).
    pub fn abstain(mut self, abstain: bool) -> Self {
        self.options.abstain = abstain;
        self
    }

    /// Report only these CTA namespaces (default: all the model has).
    pub fn namespaces<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.options.cta_namespaces = names.into_iter().map(Into::into).collect();
        self
    }

    /// How many threads annotate a batch of tables at once (default 1). Each thread takes a
    /// contiguous share of the batch; results come back in input order and equal the
    /// single-threaded ones. The tensor kernels have their own (rayon) pool besides.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// The device to run on: a [`DeviceChoice`] such as `DeviceChoice::Wgpu` (opened by
    /// [`Self::build`]) or a burn [`Device`]. Default: the CPU (burn's Flex backend).
    ///
    /// ```no_run
    /// use colswarm_model::{Annotator, DeviceChoice};
    ///
    /// let annotator = Annotator::builder("models/colswarm-small")
    ///     .device(DeviceChoice::Auto)
    ///     .build()?;
    /// # Ok::<(), colswarm_model::ModelError>(())
    /// ```
    pub fn device(mut self, device: impl Into<AnnotatorDevice>) -> Self {
        self.device = device.into();
        self
    }

    /// Opens the device and loads the model directory onto it, verifying every file's
    /// checksum.
    ///
    /// # Errors
    ///
    /// [`ModelError::Device`] when the device is not in this build or not on this machine;
    /// the model directory's errors otherwise.
    pub fn build(self) -> Result<Annotator, ModelError> {
        let device = match self.device {
            AnnotatorDevice::Device(device) => device,
            AnnotatorDevice::Choice(choice) => choice.device()?,
        };
        let mut model = Model::load(&self.model_dir, &device)?;
        // An annotator never trains its model.
        model.compact_for_inference();
        Ok(Annotator {
            model: Arc::new(model),
            options: self.options,
            threads: self.threads,
        })
    }
}

/// A trained model directory (`colswarm train` / `train-router` output, or `models/…`) ready to
/// annotate tables. Cloning is cheap (the weights are shared) and it is `Send + Sync`.
#[derive(Clone, Debug)]
pub struct Annotator {
    model: Arc<Model>,
    options: AnnotateOptions,
    threads: usize,
}

impl Annotator {
    /// Starts configuring an annotator for the model directory `dir`.
    pub fn builder(dir: impl AsRef<Path>) -> AnnotatorBuilder {
        AnnotatorBuilder {
            model_dir: dir.as_ref().to_path_buf(),
            options: AnnotateOptions::default(),
            device: AnnotatorDevice::Choice(DeviceChoice::Cpu),
            threads: 1,
        }
    }

    /// Annotates every column of one table.
    pub fn annotate(&self, table: &Table) -> Result<TableAnnotation, ModelError> {
        let mut all = self
            .model
            .annotate(std::slice::from_ref(table), &self.options)?;
        Ok(all.remove(0))
    }

    /// Annotates any number of tables (one result per table, in order). They are cut into
    /// forward passes of the annotator's batch size (a very wide table gets one of its own:
    /// [`passes`]), and the passes are shared among its threads in contiguous runs.
    pub fn annotate_all(&self, tables: &[Table]) -> Result<Vec<TableAnnotation>, ModelError> {
        let passes = passes(tables, self.options.batch_size);
        if self.threads <= 1 || passes.len() <= 1 {
            return self.model.annotate(tables, &self.options);
        }
        let share = passes.len().div_ceil(self.threads);
        let results: Vec<Result<Vec<TableAnnotation>, ModelError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = passes
                .chunks(share)
                .map(|run| {
                    scope.spawn(move || {
                        let mut annotations = Vec::new();
                        for pass in run {
                            annotations.extend(self.model.annotate(pass, &self.options)?);
                        }
                        Ok(annotations)
                    })
                })
                .collect();
            handles
                .into_iter()
                // A panic in a worker is a bug, not bad input: re-raise it unchanged.
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut annotations = Vec::with_capacity(tables.len());
        for part in results {
            annotations.extend(part?);
        }
        Ok(annotations)
    }

    /// Every column's embedding: the primary's representation of it (its reading of the table,
    /// pooled over the column, with its n-grams and word vectors), the vector the CTA and CPA
    /// heads and fine-tuned namespaces read; the primary reads alone. Tables are read in
    /// passes of the annotator's batch size; a column's vector does not depend on the tables
    /// beside it in its pass beyond float rounding (other pass mates move a few of its numbers
    /// by about 3·10⁻⁷). For similarity search, clustering or a model of your own.
    ///
    /// ```no_run
    /// # use colswarm_model::{Annotator, read_table};
    /// let annotator = Annotator::builder("models/colswarm-small").build()?;
    /// let table = read_table("datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv")?;
    /// let embedded = annotator.embed(&[table])?;
    /// println!("{} columns of {} numbers", embedded[0].columns.len(), embedded[0].columns[0].vector.len());
    /// # Ok::<(), colswarm_model::ModelError>(())
    /// ```
    pub fn embed(&self, tables: &[Table]) -> Result<Vec<TableEmbedding>, ModelError> {
        let mut embedded = Vec::with_capacity(tables.len());
        for pass in passes(tables, self.options.batch_size) {
            let examples = self.model.encode(pass, Columns::All);
            let refs: Vec<&Example> = examples.iter().collect();
            let out = self.model.forward(&refs, SpecialistUse::Off)?;
            let mut rows = rows_of(out.columns).into_iter();
            for (table, example) in pass.iter().zip(&examples) {
                let columns = example
                    .columns
                    .iter()
                    .zip(rows.by_ref())
                    .map(|(&index, row)| ColumnEmbedding {
                        index,
                        header: table.columns[index].header.clone(),
                        vector: row,
                    })
                    .collect();
                embedded.push(TableEmbedding {
                    table: table.id.clone(),
                    columns,
                });
            }
        }
        Ok(embedded)
    }

    /// How many tables [`Annotator::annotate_all`] keeps every thread busy with for one
    /// forward pass each: a caller reading tables from files reads this many at a time.
    pub fn tables_per_round(&self) -> usize {
        self.options.batch_size.max(1) * self.threads.max(1)
    }

    /// The same annotator (sharing its weights) with another choice of specialists: how
    /// `colswarm bench` measures the primary alone, the router's choice and every specialist
    /// on one loaded model.
    pub fn with_specialists(&self, specialists: SpecialistUse) -> Annotator {
        let mut other = self.clone();
        other.options.specialists = specialists;
        other
    }

    /// How it annotates (namespaces, `top_k`, batch size, specialists).
    pub fn options(&self) -> &AnnotateOptions {
        &self.options
    }

    /// How many threads [`Annotator::annotate_all`] uses.
    pub fn threads(&self) -> usize {
        self.threads
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
    fn a_column_embedding_is_what_the_heads_read_whatever_the_tables_beside_it() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
        let annotator = Annotator::builder(format!("{root}models/colswarm-small"))
            .batch_size(3)
            .build()
            .unwrap();
        let samples = PathBuf::from(format!("{root}datasets/t2d-webtables/samples"));
        let tables: Vec<Table> = crate::read::table_files(&[samples])
            .unwrap()
            .iter()
            .take(4)
            .map(|p| crate::read::read_table(p).unwrap())
            .collect();
        let together = annotator.embed(&tables).unwrap();
        assert_eq!(together.len(), tables.len());
        let width = annotator.model().swarm.orchestrator.primary.d_model();
        for (table, embedded) in tables.iter().zip(&together) {
            assert_eq!(embedded.table, table.id);
            assert_eq!(embedded.columns.len(), table.columns.len());
            assert!(embedded.columns.iter().all(|c| c.vector.len() == width));
            let alone = annotator.embed(std::slice::from_ref(table)).unwrap();
            for (a, b) in alone[0].columns.iter().zip(&embedded.columns) {
                let gap = a.vector.iter().zip(&b.vector).map(|(x, y)| (x - y).abs());
                assert!(
                    gap.fold(0f32, f32::max) < 1e-4,
                    "{} column {}",
                    table.id,
                    a.index
                );
            }
        }
        // The vector the heads read: the shared CTA head on it gives the annotation's answer.
        let examples = annotator.model().encode(&tables[..1], Columns::All);
        let features = rows_of(
            annotator
                .model()
                .column_features(&examples.iter().collect::<Vec<_>>())
                .unwrap(),
        );
        assert_eq!(features[0][..width], together[0].columns[0].vector[..]);
        let distinct = together[0].columns[0].vector != together[0].columns[1].vector;
        assert!(distinct, "two columns of a table, one vector");
    }

    #[test]
    fn threads_sharing_one_annotator_agree_with_a_single_thread() {
        let annotator = Annotator::builder(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../models/colswarm-small"
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
            assert_same_top_labels(a, b);
        }
    }

    /// Batching changes padding, not results: the same top label per column (and the same
    /// abstentions), its confidence within 1e-4.
    fn assert_same_top_labels(a: &TableAnnotation, b: &TableAnnotation) {
        assert_eq!(a.columns.len(), b.columns.len());
        for (x, y) in a.columns.iter().zip(&b.columns) {
            assert_eq!(x.types[0].abstained, y.types[0].abstained);
            assert_eq!(x.types[0].top_k[0].label, y.types[0].top_k[0].label);
            let (p, q) = (
                x.types[0].top_k[0].confidence,
                y.types[0].top_k[0].confidence,
            );
            assert!((p - q).abs() < 1e-4, "{p} vs {q}");
        }
    }

    #[test]
    fn specialist_use_decides_which_specialists_run() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/colswarm-small");
        let table = Table::from_rows(
            "t",
            Some(vec!["city".into(), "country".into()]),
            vec![vec!["Lyon".into(), "France".into()]],
        );
        let opened = |use_: SpecialistUse| -> Vec<bool> {
            let annotator = Annotator::builder(dir).specialists(use_).build().unwrap();
            let annotation = annotator.annotate(&table).unwrap();
            annotation.router.iter().map(|g| g.active).collect()
        };
        // Four specialists that contribute their answers (the shipped model has no state
        // specialist).
        assert_eq!(opened(SpecialistUse::All), [true; 4]);
        assert_eq!(opened(SpecialistUse::Off), [false; 4]);
        // The router's own choice: each gate against ½, which, untrained, opens a specialist
        // where the primary's confidence in its namespaces is below the specialist's rule.
        let annotator = Annotator::builder(dir).build().unwrap();
        let routed = annotator.annotate(&table).unwrap();
        let experts = &routed.router;
        assert_eq!(experts.len(), annotator.model().experts.len());
        for (gate, expert) in experts.iter().zip(&annotator.model().experts) {
            assert_eq!(gate.specialist, expert.name);
            assert_eq!(gate.active, gate.gate > 0.5, "{gate:?}");
        }
        assert!(experts.iter().any(|g| g.active) && experts.iter().any(|g| !g.active));
    }

    #[test]
    fn two_annotating_threads_give_the_single_threaded_result_in_order() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/colswarm-small");
        let one = Annotator::builder(dir).batch_size(2).build().unwrap();
        let two = Annotator::builder(dir)
            .batch_size(2)
            .threads(2)
            .build()
            .unwrap();
        assert_eq!(two.threads(), 2);
        let tables: Vec<Table> = (0..5)
            .map(|i| {
                Table::from_rows(
                    format!("t{i}"),
                    Some(vec!["name".into(), "year".into()]),
                    vec![vec![format!("Item {i}"), format!("{}", 1990 + i)]],
                )
            })
            .collect();
        // The threads form other forward batches (shares of 3 + 2 tables, not 2 + 2 + 1), which
        // changes padding, not results.
        let expected = one.annotate_all(&tables).unwrap();
        let got = two.annotate_all(&tables).unwrap();
        let ids: Vec<&str> = got.iter().map(|a| a.table.as_str()).collect();
        assert_eq!(ids, ["t0", "t1", "t2", "t3", "t4"]);
        for (a, b) in got.iter().zip(&expected) {
            assert_same_top_labels(a, b);
        }
    }

    /// The annotator holds the shipped n-gram tables in half floats (they are stored so), and
    /// answers exactly as the model loaded as it is.
    #[test]
    fn half_float_ngram_tables_change_no_answer() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/colswarm-small");
        let annotator = Annotator::builder(dir)
            .specialists(SpecialistUse::All)
            .build()
            .unwrap();
        let mut loaded = Model::load(Path::new(dir), &Device::flex()).unwrap();
        let primary = |m: &Model| {
            m.swarm
                .orchestrator
                .ngrams
                .as_ref()
                .unwrap()
                .weight
                .val()
                .dtype()
        };
        assert_eq!(primary(annotator.model()), burn::tensor::DType::F16);
        assert_eq!(primary(&loaded), burn::tensor::DType::F32);
        let tables = [Table::from_rows(
            "t",
            Some(vec!["city".into(), "country".into(), "population".into()]),
            vec![
                vec!["Lyon".into(), "France".into(), "522228".into()],
                vec!["Porto".into(), "Portugal".into(), "231800".into()],
            ],
        )];
        let options = AnnotateOptions {
            specialists: SpecialistUse::All,
            ..AnnotateOptions::default()
        };
        let as_stored = loaded.annotate(&tables, &options).unwrap();
        let held = annotator.annotate_all(&tables).unwrap();
        let json = |a: &[TableAnnotation]| serde_json::to_string(a).unwrap();
        assert_eq!(json(&held), json(&as_stored));
        // Compacting again finds nothing left to hold.
        assert!(loaded.compact_for_inference() > 1);
        assert_eq!(loaded.compact_for_inference(), 0);
    }

    #[test]
    fn a_missing_model_directory_is_named() {
        let err = Annotator::builder("no/such/model").build().unwrap_err();
        assert!(err.to_string().contains("no/such/model"), "{err}");
    }
}
