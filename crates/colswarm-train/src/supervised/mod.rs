//! The supervised stage: a primary (with its CTA/CPA heads, alignments and fusion) trained on
//! labelled tables with Adam, frozen specialists (if any) read in beside it.
//!
//! A specialist is trained by this same stage with no specialists of its own; its primary is
//! then the specialist checkpoint.
//!
//! - **Epochs** visit the training examples in an order drawn from `(seed, epoch)`; the router's
//!   Bernoulli masks are drawn from `(seed, step)`, column-dropout masks (if any) from `(seed,
//!   step, table's place in the batch)`, each from its stream of [`crate::run`]. Nothing else
//!   is random, so a run resumed from a checkpoint takes exactly the steps the uninterrupted
//!   run would have taken.
//! - **Dev evaluation** after every epoch (mean micro-F1 over the dev sets), **early stopping**
//!   after `patience` epochs without improvement, the best model in `best/`.
//! - **Checkpoints** every `checkpoint_every` steps and at every epoch end, written atomically;
//!   parameters get deterministic ids ([`crate::param_ids`]) so Adam's state is restored too.
//! - **Non-finite losses** stop the run with an error naming the step (the last checkpoint is
//!   untouched), or skip the batch and log it.
//! - **Data parallelism** ([`TrainOptions::devices`]): each batch is split into contiguous shards
//!   computed concurrently on replicas of the orchestrator ([`crate::data_parallel`]); the loss of
//!   a shard is its part of the batch's loss (`loss::shard_loss`) and its router masks are the ones
//!   the undivided batch would draw, so the step is the one-device step up to float rounding.
//!
//! Files, as in every stage: `config` (what a run depends on; data only), `data` (examples and
//! dev sets), `step` (one step's shards), `training` (the checks and the loop), plus `loss`. The
//! optimizer and run settings, the run directory, resuming, checkpoints, logging and dev
//! evaluation are [`crate::run`]'s, shared with the other stages.

mod config;
mod data;
mod loss;
mod step;
mod training;

pub use config::{
    DataSettings, LossSettings, ModelSettings, Regularization, SpecialistSpec, Stopping,
    TrainConfig, TrainOptions, TrainSummary,
};
pub(crate) use loss::{namespace_loss, supervised_loss};
pub use training::train;
