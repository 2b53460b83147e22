//! The whole forward pass: primary read → router → specialists → align → fuse → queries → heads.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Device, IndexingUpdateOp, Int, Tensor, TensorData};
use colswarm_rwkv::{LayerState, Rwkv, RwkvConfig, RwkvState};
use rand::Rng;
use rayon::prelude::*;

use crate::alignment::{AlignmentProjection, StateShape};
use crate::batch::TableBatch;
use crate::error::SwarmError;
use crate::fusion::{FusionMode, StateFusion, StateFusionConfig};
use crate::heads::{ColumnHead, ColumnHeadConfig, LabelKind};
use crate::ngram_embedding::{ColumnNgramsConfig, NgramEmbedding};
use crate::pooling::{span_means, spread_rows};
use crate::router::{RouterDecision, SpecialistRouter, SpecialistRouterConfig};
use crate::specialist::{FrozenSpecialist, pad};
use crate::steps::{StageSteps, TableSteps};
use crate::word_vectors::{ColumnWordsConfig, WordProjection, WordVectors};

/// Configuration of the trainable part of a swarm.
#[derive(Config, Debug, PartialEq)]
pub struct OrchestratorConfig {
    /// The primary RWKV-7 model.
    pub primary: RwkvConfig,
    /// Number of CTA labels.
    pub cta_labels: usize,
    /// Single- or multi-label CTA.
    pub cta_kind: LabelKind,
    /// Number of CPA relations (0: no CPA head is used).
    pub cpa_labels: usize,
    /// Fusion rule.
    #[config(default = "FusionMode::WeightedSum")]
    pub fusion: FusionMode,
    /// Router inference threshold τ.
    #[config(default = 0.5)]
    pub threshold: f64,
    /// At most this many active specialists per table.
    #[config(default = "None")]
    pub budget: Option<usize>,
    /// Hidden width of the heads.
    #[config(default = 256)]
    pub d_head_hidden: usize,
    /// Hashed character n-gram features of each column, embedded and added to its
    /// representation; `None` reads none.
    #[config(default = "None")]
    pub column_ngrams: Option<ColumnNgramsConfig>,
    /// Static word vectors of each column (its cells' and its header's mean vector),
    /// projected and added to its representation; `None` reads none.
    #[config(default = "None")]
    pub column_words: Option<ColumnWordsConfig>,
    /// What both heads add to their tanh layer; `None` adds nothing.
    #[config(default = "None")]
    pub head_skip: Option<HeadSkip>,
    /// Column fusion: each active specialist's reading of each column (the mean of its hidden
    /// states over the column's span), mapped to the primary's width by its alignment, is
    /// added to the column's representation. Off, specialists reach the answers only through
    /// the fused state.
    #[config(default = false)]
    pub column_fusion: bool,
}

/// What a head adds to its two-layer output.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum HeadSkip {
    /// A linear map of the head's inputs ([`ColumnHead::skip`]).
    Linear,
}

/// The trainable modules of a swarm. Specialists are *not* part of it (see [`Swarm`]), so an
/// optimizer over this module can never touch them.
#[derive(Module, Debug)]
pub struct Orchestrator {
    /// The primary model.
    pub primary: Rwkv,
    /// The sigmoid router.
    pub router: SpecialistRouter,
    /// One alignment per specialist.
    pub alignments: Vec<AlignmentProjection>,
    /// State fusion (all layers).
    pub fusion: StateFusion,
    /// CTA head.
    pub cta: ColumnHead,
    /// CPA head (pairwise).
    pub cpa: ColumnHead,
    /// See [`OrchestratorConfig::column_ngrams`].
    pub ngrams: Option<NgramEmbedding>,
    /// How the batch's n-gram bags must be hashed (see [`Orchestrator::column_ngrams`]).
    #[module(skip)]
    column_ngrams: Option<ColumnNgramsConfig>,
    /// See [`OrchestratorConfig::column_words`].
    pub words: Option<WordProjection>,
    /// How the batch's word-vector features must be computed (see [`Orchestrator::column_words`]).
    #[module(skip)]
    column_words: Option<ColumnWordsConfig>,
    /// The fixed word vectors the features are computed from, once attached
    /// ([`Orchestrator::with_word_vectors`]).
    #[module(skip)]
    word_vectors: Option<Arc<WordVectors>>,
}

/// A primary with its frozen specialists.
#[derive(Clone, Debug)]
pub struct Swarm {
    /// The trainable part.
    pub orchestrator: Orchestrator,
    /// Frozen specialists, in router order.
    pub specialists: Vec<FrozenSpecialist>,
}

/// The primary's read of a batch of tables (deterministic given the tables: shared by all
/// rollouts of a PARL group).
#[derive(Clone, Debug)]
pub struct TableRead {
    /// State after each table.
    pub state: RwkvState,
    /// Masked mean of the hidden states over each table's tokens, `[batch, d_model]`.
    pub pooled: Tensor<2>,
    /// The mean of the hidden states over each queried column's span, `[columns, d_model]` in
    /// [`TableBatch::column_rows`] order.
    pub column_pooled: Tensor<2>,
    /// With [`OrchestratorConfig::column_ngrams`]: each queried column's n-gram embedding,
    /// `[columns, d_model]` in [`TableBatch::column_rows`] order.
    pub column_ngrams: Option<Tensor<2>>,
    /// With [`OrchestratorConfig::column_words`]: each queried column's projected word
    /// vectors, `[columns, d_model]` in [`TableBatch::column_rows`] order.
    pub column_words: Option<Tensor<2>>,
    /// Token count of each table.
    pub lengths: Vec<usize>,
    /// Wall-clock seconds of the read.
    pub seconds: f64,
}

/// Specialist states of a batch: per specialist, per *primary* layer, aligned
/// `[batch, heads, N, N]` (zeros where the specialist did not run).
#[derive(Clone, Debug)]
pub struct SpecialistStates {
    /// `aligned[i][l]`; empty for a specialist no table activated.
    pub aligned: Vec<Vec<Tensor<4>>>,
    /// Per specialist: tokens read (sum over its rows) and wall-clock seconds.
    pub work: Vec<(usize, f64)>,
    /// Per specialist and table: tokens it read for that table (0 when inactive).
    pub tokens: Vec<Vec<usize>>,
    /// With column fusion: per specialist, its column readings mapped to the primary's width,
    /// `[columns, d_model]` in [`TableBatch::column_rows`] order (zeros for the columns of
    /// tables that did not activate it); `None` for a specialist no table activated.
    pub columns: Vec<Option<Tensor<2>>>,
}

/// Everything a forward pass produces.
#[derive(Clone, Debug)]
pub struct SwarmOutput {
    /// Per-column representations, `[columns, d_model]`, rows in [`TableBatch::column_rows`]
    /// order.
    pub columns: Tensor<2>,
    /// CTA logits, `[columns, cta_labels]`.
    pub cta_logits: Tensor<2>,
    /// CPA logits of the batch's pairs ([`TableBatch::cpa_pairs`]), `[pairs, cpa_labels]`
    /// in [`TableBatch::cpa_rows`] order; `None` when it asks for none.
    pub cpa_logits: Option<Tensor<2>>,
    /// The routing decision.
    pub router: RouterDecision,
    /// The primary's pooled read of each table ([`TableRead::pooled`]), `[batch, d_model]`:
    /// what routers downstream of the heads read.
    pub pooled: Tensor<2>,
    /// Stage-by-stage work of the batch, in tokens (its longest table's): the primary's read,
    /// the active specialists' reads in parallel, the queries; critical vs serial steps.
    pub steps: TableSteps,
}

/// How the router's mask is chosen.
#[derive(Debug)]
pub enum Routing<'a, R: Rng> {
    /// Training: Bernoulli samples, the mask read back to the host so that specialists skip
    /// the tables it closes to them (where host and device share memory, as on the CPU).
    Sample(&'a mut R),
    /// Training: the same Bernoulli samples, the mask left on the device
    /// ([`SpecialistRouter::sample_on_device`]); every specialist reads every table, and the
    /// mask gates what it adds (on a GPU, where a read-back would stall the queue).
    SampleOnDevice(&'a mut R),
    /// Inference: `g > τ` with the budget.
    Threshold,
    /// A given mask (`[table][specialist]`), e.g. a rollout to re-score.
    Fixed(Vec<Vec<bool>>),
}

impl OrchestratorConfig {
    /// Builds the orchestrator for the given specialists' state shapes; every random weight is
    /// drawn from `seed` (the router, alignments and fusion start from constants).
    pub fn init(&self, specialists: &[StateShape], seed: u64, device: &Device) -> Orchestrator {
        let p = &self.primary;
        let target = StateShape {
            layers: p.n_layers,
            heads: p.n_heads(),
            head_size: p.head_size,
            d_model: p.d_model,
        };
        Orchestrator {
            primary: p.init(seed, device),
            router: SpecialistRouterConfig::new(p.d_model, specialists.len())
                .with_threshold(self.threshold)
                .with_budget(self.budget)
                .init(device),
            alignments: specialists
                .iter()
                .map(|&s| {
                    let alignment = AlignmentProjection::new(s, target, device);
                    if self.column_fusion {
                        alignment.with_column_map(s, target, device)
                    } else {
                        alignment
                    }
                })
                .collect(),
            fusion: StateFusionConfig::new(
                self.fusion,
                p.n_layers,
                p.n_heads(),
                p.head_size,
                specialists.len(),
            )
            .init(device),
            cta: ColumnHeadConfig::new(p.d_model, self.cta_labels.max(1), self.cta_kind)
                .with_d_hidden(self.d_head_hidden)
                .with_linear_skip(self.head_skip.is_some())
                .init(seed.wrapping_add(1), device),
            cpa: ColumnHeadConfig::new(p.d_model, self.cpa_labels.max(1), LabelKind::SingleLabel)
                .with_d_hidden(self.d_head_hidden)
                .with_pairwise(true)
                .with_linear_skip(self.head_skip.is_some())
                .init(seed.wrapping_add(2), device),
            ngrams: self.column_ngrams.map(|c| c.init(p.d_model, device)),
            column_ngrams: self.column_ngrams,
            words: self.column_words.map(|c| c.init(p.d_model, device)),
            column_words: self.column_words,
            word_vectors: None,
        }
    }
}

impl Orchestrator {
    /// Stage 1: the primary reads every table; the columns' n-gram bags are embedded alongside
    /// (they do not depend on routing). Fails when the model reads n-grams and the batch
    /// carries none, or a bag names a bucket past the embedding.
    pub fn read_tables(&self, batch: &TableBatch) -> Result<TableRead, SwarmError> {
        let start = Instant::now();
        if self.ngrams.is_some() && batch.ngrams.len() != batch.tables.len() {
            return Err(SwarmError::Input(format!(
                "the model reads column n-grams but the batch carries n-gram bags for {} of its {} tables",
                batch.ngrams.len(),
                batch.tables.len()
            )));
        }
        let bags: Vec<&[(u32, f32)]> = batch
            .ngrams
            .iter()
            .flat_map(|table| table.iter().map(Vec::as_slice))
            .collect();
        let column_ngrams = match &self.ngrams {
            Some(embedding) => Some(embedding.forward(&bags)?),
            None => None,
        };
        let column_words = match &self.words {
            Some(projection) => {
                if batch.words.len() != batch.tables.len() {
                    return Err(SwarmError::Input(format!(
                        "the model reads word vectors but the batch carries word features for {} of its {} tables",
                        batch.words.len(),
                        batch.tables.len()
                    )));
                }
                let rows: Vec<&[f32]> = batch
                    .words
                    .iter()
                    .flat_map(|table| table.iter().map(Vec::as_slice))
                    .collect();
                Some(projection.forward(&rows)?)
            }
            None => None,
        };
        let device = self.device();
        let tables: Vec<&[u32]> = batch.tables.iter().map(Vec::as_slice).collect();
        let (tokens, lengths) = pad(&tables, &device);
        let out = self.primary.forward(tokens, Some(&lengths), None);
        // The table's mean and each column's mean are the same average over a token range.
        let whole_tables: Vec<Vec<Range<usize>>> = lengths
            .iter()
            .map(|&len| std::iter::once(0..len).collect())
            .collect();
        let pooled = span_means(out.hidden.clone(), &whole_tables);
        let column_pooled = span_means(out.hidden, &batch.spans);
        Ok(TableRead {
            state: out.state,
            pooled,
            column_pooled,
            column_ngrams,
            column_words,
            lengths,
            seconds: start.elapsed().as_secs_f64(),
        })
    }

    /// The same model reading the given n-gram features: an embedding already of that
    /// configuration is kept, any other starts at zero (so the model's outputs do not change
    /// until training moves it); `None` drops it.
    pub fn with_column_ngrams(
        mut self,
        config: Option<ColumnNgramsConfig>,
        device: &Device,
    ) -> Self {
        if config != self.column_ngrams {
            let d_model = self.primary.emb.weight.dims()[1];
            self.ngrams = config.map(|c| c.init(d_model, device));
            self.column_ngrams = config;
        }
        self
    }

    /// The n-gram features this model reads, if any: whoever builds a [`TableBatch`] for it
    /// must hash each column's n-grams this way into [`TableBatch::ngrams`].
    pub fn column_ngrams(&self) -> Option<&ColumnNgramsConfig> {
        self.column_ngrams.as_ref()
    }

    /// The same model reading word vectors of the given configuration, computed from
    /// `vectors` (whose dimension must be the configuration's): a projection already of that
    /// configuration is kept, any other starts at zero; `None` drops both.
    pub fn with_word_vectors(
        mut self,
        words: Option<(ColumnWordsConfig, Arc<WordVectors>)>,
        device: &Device,
    ) -> Result<Self, SwarmError> {
        let (config, vectors) = words.unzip();
        if let (Some(config), Some(vectors)) = (&config, &vectors)
            && config.dim != vectors.dim()
        {
            return Err(SwarmError::Inconsistent(format!(
                "the model reads word vectors of dimension {} but the table's are {}",
                config.dim,
                vectors.dim()
            )));
        }
        if config != self.column_words {
            let d_model = self.primary.emb.weight.dims()[1];
            self.words = config.map(|c| c.init(d_model, device));
            self.column_words = config;
        }
        self.word_vectors = vectors;
        Ok(self)
    }

    /// The word-vector features this model reads and the table they come from, if it reads
    /// any and the table is attached: whoever builds a [`TableBatch`] for it must compute each
    /// column's features this way into [`TableBatch::words`].
    pub fn column_words(&self) -> Option<(&ColumnWordsConfig, &Arc<WordVectors>)> {
        self.column_words.as_ref().zip(self.word_vectors.as_ref())
    }

    /// The device the orchestrator's parameters live on.
    pub fn device(&self) -> Device {
        self.primary.emb.weight.device()
    }

    /// Stage 3: fuses the specialists' states into the primary's, layer by layer. The token-shift
    /// memories stay the primary's own (they hold the last token read, the same for everyone).
    pub fn fuse(
        &self,
        state: &RwkvState,
        specialists: &SpecialistStates,
        decision: &RouterDecision,
    ) -> RwkvState {
        // Only specialists active for at least one table take part.
        let included: Vec<usize> = (0..specialists.aligned.len())
            .filter(|&i| decision.active.iter().any(|row| row[i]))
            .collect();
        let layers = state
            .layers
            .iter()
            .enumerate()
            .map(|(l, layer)| {
                let others: Vec<(usize, Tensor<4>)> = included
                    .iter()
                    .map(|&i| (i, specialists.aligned[i][l].clone()))
                    .collect();
                LayerState {
                    wkv: self.fusion.forward_layer(
                        l,
                        layer.wkv.clone(),
                        &others,
                        decision.mask.clone(),
                        decision.probs.clone(),
                    ),
                    att_shift: layer.att_shift.clone(),
                    ffn_shift: layer.ffn_shift.clone(),
                }
            })
            .collect();
        RwkvState { layers }
    }

    /// Stage 4: the primary answers one query per column from the (fused) state of its table;
    /// a column is represented by the hidden state at its query's last token.
    ///
    /// # Shapes
    ///
    /// - returns `[columns, d_model]` in [`TableBatch::column_rows`] order
    pub fn answer(&self, state: &RwkvState, batch: &TableBatch) -> Tensor<2> {
        let device = self.device();
        let rows = batch.column_rows();
        let table_of_row: Vec<i64> = rows.iter().map(|&(t, _)| t as i64).collect();
        let row_state = state.select(Tensor::<1, Int>::from_data(
            table_of_row.as_slice(),
            &device,
        ));
        let queries: Vec<&[u32]> = rows
            .iter()
            .map(|&(t, c)| batch.queries[t][c].as_slice())
            .collect();
        let (tokens, lengths) = pad(&queries, &device);
        let out = self
            .primary
            .forward(tokens, Some(&lengths), Some(row_state));
        let [m, _, d] = out.hidden.dims();
        let last: Vec<i64> = lengths
            .iter()
            .map(|&l| l.saturating_sub(1) as i64)
            .collect();
        let index = Tensor::<1, Int>::from_data(last.as_slice(), &device)
            .reshape([m, 1, 1])
            .expand([m, 1, d]);
        out.hidden.gather(1, index).reshape([m, d])
    }

    /// The column representations the heads read: [`Self::answer`] from the (fused) state,
    /// plus the mean of the table read over each column's span, the columns' n-gram
    /// embeddings ([`OrchestratorConfig::column_ngrams`]) and, with column fusion, the aligned
    /// column readings ([`SpecialistStates::columns`]) of the specialists each table activated
    /// (the decision's mask: on the host, `active[table][specialist]`; drawn on the device, its
    /// `mask`).
    ///
    /// # Shapes
    ///
    /// - returns `[columns, d_model]` in [`TableBatch::column_rows`] order
    pub fn columns(
        &self,
        state: &RwkvState,
        batch: &TableBatch,
        read: &TableRead,
        specialists: &SpecialistStates,
        decision: &RouterDecision,
    ) -> Tensor<2> {
        let mut columns = self.answer(state, batch) + read.column_pooled.clone();
        if let Some(ngrams) = &read.column_ngrams {
            columns = columns + ngrams.clone();
        }
        if let Some(words) = &read.column_words {
            columns = columns + words.clone();
        }
        let rows = batch.column_rows();
        let active = &decision.active;
        // A mask drawn on the device gates each column by its table's row of it.
        let row_mask = decision.on_device.then(|| {
            let table_of_row: Vec<i64> = rows.iter().map(|&(t, _)| t as i64).collect();
            let index = Tensor::<1, Int>::from_data(table_of_row.as_slice(), &self.device());
            decision.mask.clone().select(0, index)
        });
        for (i, readings) in specialists.columns.iter().enumerate() {
            let Some(readings) = readings else { continue };
            if let Some(mask) = &row_mask {
                columns = columns + readings.clone() * mask.clone().narrow(1, i, 1);
            } else if rows.iter().all(|&(t, _)| active[t][i]) {
                columns = columns + readings.clone();
            } else if rows.iter().any(|&(t, _)| active[t][i]) {
                let mask: Vec<f32> = rows
                    .iter()
                    .map(|&(t, _)| f32::from(u8::from(active[t][i])))
                    .collect();
                let mask =
                    Tensor::<2>::from_data(TensorData::new(mask, [rows.len(), 1]), &self.device());
                columns = columns + readings.clone() * mask;
            }
        }
        columns
    }

    /// Whether specialists' column readings enter the column representations.
    pub fn has_column_fusion(&self) -> bool {
        self.alignments.iter().any(|a| a.column_map.is_some())
    }

    /// The output of a forward pass from its column representations: the CTA head's logits.
    pub fn output(
        &self,
        columns: Tensor<2>,
        (read, router): (&TableRead, RouterDecision),
        steps: TableSteps,
    ) -> SwarmOutput {
        SwarmOutput {
            cta_logits: self.cta.forward(columns.clone()),
            cpa_logits: None,
            columns,
            router,
            pooled: read.pooled.clone(),
            steps,
        }
    }

    /// CPA logits for `(subject row, object row)` pairs of [`SwarmOutput::columns`].
    ///
    /// # Shapes
    ///
    /// - returns `[pairs, cpa_labels]`
    pub fn cpa_logits(&self, out: &SwarmOutput, pairs: &[(usize, usize)]) -> Tensor<2> {
        let device = self.device();
        let index = |which: fn(&(usize, usize)) -> usize| {
            let index: Vec<i64> = pairs.iter().map(|p| which(p) as i64).collect();
            Tensor::<1, Int>::from_data(index.as_slice(), &device)
        };
        let pick = |which| out.columns.clone().select(0, index(which));
        self.cpa.forward_pair(pick(|p| p.0), pick(|p| p.1))
    }
}

impl Swarm {
    /// Checks that the orchestrator was built for these specialists.
    pub fn new(
        orchestrator: Orchestrator,
        specialists: Vec<FrozenSpecialist>,
    ) -> Result<Self, SwarmError> {
        let routed = orchestrator.router.n_specialists();
        if routed != specialists.len() || orchestrator.alignments.len() != specialists.len() {
            return Err(SwarmError::Inconsistent(format!(
                "the router routes {routed} specialists and there are {} alignments, but {} specialists were given",
                orchestrator.alignments.len(),
                specialists.len()
            )));
        }
        Ok(Self {
            orchestrator,
            specialists,
        })
    }

    /// This swarm without the state specialist named `name`: its checkpoint, its alignment,
    /// its gate and its fusion parameters leave; everything else is kept, so on any table the
    /// swarm answers as it did with that specialist closed (and exactly as its primary alone
    /// once none is left). `None` when no specialist has that name.
    pub fn without_specialist(mut self, name: &str) -> Option<Swarm> {
        let i = self.specialists.iter().position(|s| s.name() == name)?;
        self.specialists.remove(i);
        let o = &mut self.orchestrator;
        o.alignments.remove(i);
        o.router = o.router.without_specialist(i);
        o.fusion = o.fusion.without_specialist(i);
        Some(self)
    }

    /// Stage 2: each specialist reads the tables that activated it — only those rows — all
    /// specialists concurrently. `active[table][specialist]`.
    ///
    /// The reads are tasks on rayon's pool, the pool the tensor kernels run on, so specialists
    /// and the kernels inside them share its threads (`--threads`) instead of competing for
    /// them: with two threads, two small specialists read at once, each with single-threaded
    /// kernels, rather than one after another with each kernel split in two.
    pub fn run_specialists(&self, batch: &TableBatch, active: &[Vec<bool>]) -> SpecialistStates {
        let device = self.orchestrator.device();
        let with_columns = self.orchestrator.has_column_fusion();
        let runs: Vec<SpecialistRun> = self
            .specialists
            .par_iter()
            .enumerate()
            .map(|(i, specialist)| {
                SpecialistRun::new(specialist, i, batch, active, with_columns, &device)
            })
            .collect();
        let mut states = SpecialistStates {
            aligned: Vec::with_capacity(runs.len()),
            work: Vec::with_capacity(runs.len()),
            tokens: Vec::with_capacity(runs.len()),
            columns: Vec::with_capacity(runs.len()),
        };
        for (run, alignment) in runs.into_iter().zip(&self.orchestrator.alignments) {
            // A specialist no table activated is left out of fusion: skip its alignment.
            let aligned = if run.tokens.iter().all(|&t| t == 0) {
                Vec::new()
            } else {
                alignment.forward(&run.states)
            };
            states.aligned.push(aligned);
            states
                .columns
                .push(run.columns.and_then(|c| alignment.align_columns(c)));
            states.work.push((run.tokens.iter().sum(), run.seconds));
            states.tokens.push(run.tokens);
        }
        states
    }

    /// The whole forward pass.
    pub fn forward<R: Rng>(
        &self,
        batch: &TableBatch,
        routing: Routing<'_, R>,
    ) -> Result<SwarmOutput, SwarmError> {
        self.forward_masked(batch, routing, None)
    }

    /// The whole forward pass, the column representations multiplied by `column_mask` before
    /// the heads read them (training's column dropout; `None` is [`Self::forward`]).
    ///
    /// # Shapes
    ///
    /// - `column_mask`: `[columns, d_model]` in [`TableBatch::column_rows`] order
    pub fn forward_masked<R: Rng>(
        &self,
        batch: &TableBatch,
        routing: Routing<'_, R>,
        column_mask: Option<Tensor<2>>,
    ) -> Result<SwarmOutput, SwarmError> {
        batch.validate()?;
        let read = self.orchestrator.read_tables(batch)?;
        Ok(self.forward_from(batch, &read, routing, column_mask))
    }

    /// Stages 2–4 from a primary read, with an optional column mask as in
    /// [`Self::forward_masked`].
    pub fn forward_from<R: Rng>(
        &self,
        batch: &TableBatch,
        read: &TableRead,
        routing: Routing<'_, R>,
        column_mask: Option<Tensor<2>>,
    ) -> SwarmOutput {
        let router = &self.orchestrator.router;
        let decision = match routing {
            Routing::Sample(rng) => router.sample(read.pooled.clone(), rng),
            Routing::SampleOnDevice(rng) => router.sample_on_device(read.pooled.clone(), rng),
            Routing::Threshold => router.decide(read.pooled.clone()),
            Routing::Fixed(active) => router.evaluate(read.pooled.clone(), active),
        };
        let specialists = self.run_specialists(batch, &decision.active);
        let fused = self.orchestrator.fuse(&read.state, &specialists, &decision);
        let mut columns = self
            .orchestrator
            .columns(&fused, batch, read, &specialists, &decision);
        if let Some(mask) = column_mask {
            columns = columns * mask;
        }
        let query_tokens = batch
            .queries
            .iter()
            .flat_map(|q| q.iter().map(Vec::len))
            .max()
            .unwrap_or(0);
        let active: Vec<(usize, u64)> = specialists
            .tokens
            .iter()
            .enumerate()
            .filter(|(_, per_table)| per_table.iter().any(|&t| t > 0))
            .map(|(i, per_table)| (i, max(per_table) as u64))
            .collect();
        let steps = TableSteps::new(vec![
            StageSteps::main_only(max(&read.lengths) as u64),
            StageSteps::with_subtasks(0, &active),
            StageSteps::main_only(query_tokens as u64),
        ]);
        let mut out = self.orchestrator.output(columns, (read, decision), steps);
        let pairs = batch.cpa_rows();
        if !pairs.is_empty() {
            out.cpa_logits = Some(self.orchestrator.cpa_logits(&out, &pairs));
        }
        out
    }
}

fn max(values: &[usize]) -> usize {
    values.iter().copied().max().unwrap_or(0)
}

/// One specialist's work on a batch.
struct SpecialistRun {
    /// Per specialist layer, `[batch, H_s, N_s, N_s]`, zeros for rows it did not read; empty
    /// when it read nothing.
    states: Vec<Tensor<4>>,
    /// Tokens read per table (0 where inactive).
    tokens: Vec<usize>,
    /// Column readings `[columns, d_s]` in [`TableBatch::column_rows`] order, zeros for the
    /// tables it did not read; `None` when it read nothing or none were asked for.
    columns: Option<Tensor<2>>,
    seconds: f64,
}

impl SpecialistRun {
    fn new(
        specialist: &FrozenSpecialist,
        index: usize,
        batch: &TableBatch,
        active: &[Vec<bool>],
        with_columns: bool,
        device: &Device,
    ) -> Self {
        let start = Instant::now();
        let batch_size = batch.tables.len();
        let rows: Vec<usize> = (0..batch_size).filter(|&b| active[b][index]).collect();
        let mut tokens = vec![0; batch_size];
        for &b in &rows {
            tokens[b] = batch.tables[b].len();
        }
        let shape = specialist.state_shape();
        let zeros = || {
            Tensor::<4>::zeros(
                [batch_size, shape.heads, shape.head_size, shape.head_size],
                &device.clone().without_autodiff(),
            )
        };
        let mut columns = None;
        let states = if rows.is_empty() {
            Vec::new()
        } else {
            let tables: Vec<&[u32]> = rows.iter().map(|&b| batch.tables[b].as_slice()).collect();
            let read = if with_columns {
                let spans: Vec<Vec<Range<usize>>> =
                    rows.iter().map(|&b| batch.spans[b].clone()).collect();
                let (states, readings) = specialist.read_with_columns(&tables, &spans, device);
                columns = Some(spread_rows(readings, batch, &rows, device));
                states
            } else {
                specialist.read(&tables, device)
            };
            if rows.len() == batch_size {
                read
            } else {
                let index: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
                read.into_iter()
                    .map(|s| {
                        let index = Tensor::<1, Int>::from_data(index.as_slice(), &s.device());
                        zeros().select_assign(0, index, s, IndexingUpdateOp::Assign)
                    })
                    .collect()
            }
        };
        Self {
            states,
            tokens,
            columns,
            seconds: start.elapsed().as_secs_f64(),
        }
    }
}
