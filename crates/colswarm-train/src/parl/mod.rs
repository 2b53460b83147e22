//! The PARL stage: trains the orchestrator (router, fusion, alignments, primary, heads) of a
//! model with frozen specialists, on the reward `λ1(p)·r_parallel + λ2(p)·r_finish + r_perf`
//! (see `colswarm_parl` and docs/PARL.md for each term).
//!
//! Per optimizer step, for a batch of tables:
//! 1. the primary reads every table once, and every specialist reads every table once (no
//!    gradient; aligned once): all `K` rollouts of a table share these reads, since they are
//!    deterministic given the table;
//! 2. `K` rollouts sample a router mask each and fuse only the active specialists' states;
//!    the primary answers the column queries from the fused state;
//! 3. each rollout is scored (`r_perf` from its own predictions against the gold labels,
//!    `r_parallel` from its mask and gates, `r_finish` from its critical steps and
//!    degeneracy), advantages are the reward minus the group (table) mean;
//! 4. the loss is the K2.5 policy objective over the router's Bernoulli decisions plus the
//!    supervised loss of the heads averaged over the rollouts.
//!
//! Every step is logged to `log.jsonl` (reward terms, λ's, activation rate per specialist, gate
//! entropy, critical vs serial steps, F1); dev sets are scored every `eval_every` steps with
//! threshold routing, the best model kept in `best/`, and checkpoints written like the
//! supervised stage's (a run resumes from its newest checkpoint).
//!
//! Files, as in every stage: `config` (data only), `data` (the training examples and their gold
//! labels), `step` (one step's rollouts and loss), `training` (the checks and the loop).

mod config;
mod data;
mod step;
mod training;

pub use config::{ParlConfig, ParlOptions, ParlSummary, ScheduleChoice};
pub(crate) use data::gold_labels;
pub(crate) use step::{predicted_labels, rollout_policy};
pub use training::train_router;
