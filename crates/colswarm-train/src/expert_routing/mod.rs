//! The experts' routing stage: trains the sigmoid router that decides which domain experts
//! read a table and the logit mix that weighs them, with the primary, its heads and the
//! experts frozen.
//!
//! The frozen models' outputs do not depend on what is trained, so every table is read once,
//! by the primary and by every expert ([`colswarm_model::Model::expert_reads`]). Per optimizer
//! step, for a batch of tables:
//! 1. the router's gates are computed from each table's pooled read and the primary's
//!    confidence in each expert's namespaces, and `K` masks are sampled from them;
//! 2. each rollout's answers are the primary's with the open experts' logits mixed in, scored
//!    against the gold labels (`r_perf`), with `r_parallel` and `r_finish` at the annealed λ's
//!    (`colswarm_parl`) and a cost per expert read; advantages are the reward minus the
//!    table's mean over its rollouts;
//! 3. the loss is the K2.5 policy objective over the router's Bernoulli decisions plus the
//!    heads' loss of the mixed logits under the rollouts' masks (which trains the mix).
//!
//! Train on tables the primary's heads and the experts were not fitted on: on their own
//! training tables the experts' answers are as good as their memory, not their knowledge.
//! Dev sets choose the best step; checkpoints and resume are the driver's, as in every stage.

mod config;
mod data;
mod step;
mod training;

pub use config::{ExpertRoutingConfig, ExpertRoutingOptions, ExpertRoutingSummary};
pub use training::train_expert_routing;
