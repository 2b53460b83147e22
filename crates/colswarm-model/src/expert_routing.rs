//! Who among the domain experts reads a table, and how much each counts: a sigmoid router and
//! a per-namespace logit mix, trained together (`colswarm train-router --experts`, PARL).
//!
//! The router is a [`SpecialistRouter`] over the table's pooled primary read and, per expert,
//! the primary's least confident answer in that expert's namespaces: `g = σ(W·[h; c] + b)`,
//! an expert reads where `g > τ`. The mix ([`LogitMix`]) weighs each open expert's logits per
//! namespace. A model directory without a trained routing file starts from the rule it used
//! to follow ([`ExpertRouting::from_rule`]): the router reproduces each expert's
//! [`crate::ExpertRef::open_below`] and the mix is the plain average, so old directories
//! annotate exactly as before.

use std::path::Path;

use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor, TensorData};
use colswarm_rwkv::checkpoint::{CheckpointFile, save_module};
use colswarm_rwkv::init::ParamFactory;
use colswarm_swarm::manifest::{FileRef, sha256_file};
use colswarm_swarm::{
    LogitMix, LogitMixConfig, SpecialistRouter, SpecialistRouterConfig, without_index,
};

use crate::error::ModelError;
use crate::experts::ExpertList;
use crate::labels::{LabelSpace, Task};

/// File name of a trained routing inside a model directory.
pub const ROUTING_FILE: &str = "expert_routing.safetensors";

/// How steep the rule's gate is: `g = σ(κ·(p − c))` for an expert that opens below `p`. Any
/// `κ > 0` opens exactly where the rule does (`g > ½ ⇔ c < p`); 20 leaves PARL's sampled masks
/// some exploration near the threshold (`c = p ± 0.05` gives `g` = 0.73 / 0.27).
pub const RULE_SHARPNESS: f32 = 20.0;

/// The router and the logit mix of a model's experts.
#[derive(Module, Debug)]
pub struct ExpertRouting {
    /// The gates: input `[pooled read (d_model); one confidence per expert]`.
    pub router: SpecialistRouter,
    /// Per namespace (the shared CTA head's, then CPA's), each expert's weight.
    pub mix: LogitMix,
}

impl ExpertRouting {
    /// The routing that follows the confidence rule: expert `i` reads where the primary's
    /// confidence in its namespaces is below `open_below[i]` (on every table for `None`), and
    /// the open experts' logits are averaged with the primary's.
    pub fn from_rule(
        d_model: usize,
        open_below: &[Option<f32>],
        namespaces: usize,
        device: &Device,
    ) -> Self {
        let n = open_below.len();
        let router = SpecialistRouterConfig::new(d_model + n, n).init(device);
        let mix = LogitMixConfig::new(namespaces, n)
            .with_initial_weight(1.0)
            .init(device);
        let mut routing = ExpertRouting { router, mix };
        for (i, rule) in open_below.iter().enumerate() {
            routing.set_rule(i, *rule);
        }
        routing
    }

    /// This routing with one more expert, last: its gate follows `open_below` (as in
    /// [`ExpertRouting::from_rule`]) and reads nothing else, its weight in the mix is 1; the
    /// other experts' gates and weights are kept and do not read its confidence.
    pub fn with_expert(&self, open_below: Option<f32>) -> Self {
        let device = self.router.gate.weight.device();
        let n = self.experts();
        let d_model = self.router.gate.weight.shape().dims::<2>()[0] - n;
        let rule = Self::from_rule(d_model, &[open_below], self.mix.namespaces(), &device);
        let old = self.router.gate.weight.val();
        // Old inputs and gates keep their weights; the new confidence input (a zero row for
        // the old gates) and the new gate (the rule's column, zero on the old confidences).
        let old_rows = Tensor::cat(vec![old, Tensor::zeros([1, n], &device)], 0);
        let rule_weight = rule.router.gate.weight.val(); // [d_model + 1, 1]
        let new_column = Tensor::cat(
            vec![
                rule_weight.clone().slice([0..d_model, 0..1]),
                Tensor::zeros([n, 1], &device),
                rule_weight.slice([d_model..d_model + 1, 0..1]),
            ],
            0,
        );
        let weight = Tensor::cat(vec![old_rows, new_column], 1);
        let bias = Tensor::cat(
            vec![
                self.router
                    .gate
                    .bias
                    .as_ref()
                    .map(|b| b.val())
                    .unwrap_or_else(|| Tensor::zeros([n], &device)),
                rule.router
                    .gate
                    .bias
                    .as_ref()
                    .map(|b| b.val())
                    .unwrap_or_else(|| Tensor::zeros([1], &device)),
            ],
            0,
        );
        let mut router = SpecialistRouterConfig::new(d_model + n + 1, n + 1)
            .with_threshold(self.router.threshold())
            .init(&device);
        router.gate.weight = Param::from_tensor(weight);
        router.gate.bias = Some(Param::from_tensor(bias));
        let mut mix = LogitMixConfig::new(self.mix.namespaces(), n + 1).init(&device);
        mix.weight = Param::from_tensor(Tensor::cat(
            vec![self.mix.weight.val(), rule.mix.weight.val()],
            1,
        ));
        ExpertRouting { router, mix }
    }

    /// This routing without expert `i`: its gate, its confidence input and its weight in the
    /// mix leave; the other experts' gates and weights are kept. (The inverse of
    /// [`ExpertRouting::with_expert`] for the last expert.)
    pub fn without_expert(&self, i: usize) -> Self {
        let n = self.experts();
        let d_model = self.router.gate.weight.shape().dims::<2>()[0] - n;
        let weight = self.router.gate.weight.val();
        // Rows: the pooled read, then one confidence per expert; columns: one gate per expert.
        let weight = without_index(without_index(weight, 0, d_model + i), 1, i);
        let bias = (self.router.gate.bias.as_ref())
            .map(|b| Param::from_tensor(without_index(b.val(), 0, i)));
        let device = weight.device();
        let mut router = SpecialistRouterConfig::new(d_model + n - 1, n - 1)
            .with_threshold(self.router.threshold())
            .init(&device);
        router.gate.weight = Param::from_tensor(weight);
        router.gate.bias = bias;
        let mut mix = LogitMixConfig::new(self.mix.namespaces(), n - 1).init(&device);
        mix.weight = Param::from_tensor(without_index(self.mix.weight.val(), 1, i));
        ExpertRouting { router, mix }
    }

    /// Expert `i`'s gate set to follow the confidence rule `open_below` (as in
    /// [`ExpertRouting::from_rule`]: it then reads its own confidence alone); the other gates
    /// and the mix are kept.
    pub fn set_rule(&mut self, i: usize, open_below: Option<f32>) {
        let n = self.experts();
        let rows = self.router.gate.weight.dims()[0];
        let host = |t: Tensor<1>| t.into_data().try_to_vec::<f32>().unwrap_or_default();
        let (column, rule_bias) = self.rule_column(i, open_below);
        let column = host(column);
        let mut weight = host(self.router.gate.weight.val().reshape([rows * n]));
        for (row, value) in column.into_iter().enumerate() {
            weight[row * n + i] = value;
        }
        let mut bias = match &self.router.gate.bias {
            Some(b) => host(b.val()),
            None => vec![0.0; n],
        };
        bias[i] = rule_bias;
        // Built from values, as the router's own init is (ParamFactory), so that a routing
        // trained from it resumes as it ran.
        let device = self.router.gate.weight.device();
        let params = ParamFactory::new(0, &device);
        self.router.gate.weight = params.from_values(weight, [rows, n]);
        self.router.gate.bias = Some(params.from_values(bias, [n]));
    }

    /// Whether expert `i`'s gate is exactly the rule `open_below` (a routing stored for its
    /// mix alone, or trained and left where it started).
    pub fn follows_rule(&self, i: usize, open_below: Option<f32>) -> bool {
        let (column, bias) = self.rule_column(i, open_below);
        let rows = self.router.gate.weight.dims()[0];
        let gate = self
            .router
            .gate
            .weight
            .val()
            .narrow(1, i, 1)
            .reshape([rows]);
        let stored_bias = (self.router.gate.bias.as_ref())
            .map(|b| b.val().into_data().try_to_vec::<f32>().unwrap_or_default()[i])
            .unwrap_or(0.0);
        let values = |t: Tensor<1>| t.into_data().try_to_vec::<f32>().unwrap_or_default();
        values(gate) == values(column) && stored_bias == bias
    }

    /// The rule's gate for expert `i`: its column of weights and its bias.
    fn rule_column(&self, i: usize, open_below: Option<f32>) -> (Tensor<1>, f32) {
        let rows = self.router.gate.weight.dims()[0];
        let d_model = rows - self.experts();
        let mut column = vec![0f32; rows];
        let bias = match open_below {
            Some(p) => {
                column[d_model + i] = -RULE_SHARPNESS;
                RULE_SHARPNESS * p
            }
            None => RULE_SHARPNESS,
        };
        let device = self.router.gate.weight.device();
        (
            Tensor::from_data(TensorData::new(column, [rows]), &device),
            bias,
        )
    }

    /// Sets expert `expert`'s weight θ in the mix of namespace `namespace` (numbered as
    /// [`mixed_namespaces`] counts them): 0 leaves the namespace to the primary, 1 is the plain
    /// average.
    pub fn set_mix_weight(&mut self, namespace: usize, expert: usize, theta: f32) {
        let mut weights =
            (self.mix.weight.val().into_data().try_to_vec::<f32>()).unwrap_or_default();
        let n = self.experts();
        weights[namespace * n + expert] = theta;
        let device = self.mix.weight.device();
        let shape = [self.mix.namespaces(), n];
        self.mix.weight =
            Param::from_tensor(Tensor::from_data(TensorData::new(weights, shape), &device));
    }

    /// Number of experts routed.
    pub fn experts(&self) -> usize {
        self.router.n_specialists()
    }

    /// The router's input: each table's pooled read beside its confidences.
    ///
    /// # Shapes
    ///
    /// - `pooled`: `[tables, d_model]`; `confidence`: `tables` rows of one value per expert
    /// - output: `[tables, d_model + experts]`
    pub fn features(pooled: Tensor<2>, confidence: &[Vec<f32>]) -> Tensor<2> {
        let n = confidence.first().map_or(0, Vec::len);
        let flat: Vec<f32> = confidence.iter().flatten().copied().collect();
        let confidence = Tensor::<2>::from_data(
            TensorData::new(flat, [confidence.len(), n]),
            &pooled.device(),
        );
        Tensor::cat(vec![pooled, confidence], 1)
    }

    /// Loads the routing stored as `file` in `dir` (checksum verified) for `experts` experts
    /// over a `d_model`-wide read and `namespaces` namespaces.
    pub fn load(
        dir: &Path,
        file: &FileRef,
        (d_model, experts, namespaces): (usize, usize, usize),
        device: &Device,
    ) -> Result<Self, ModelError> {
        let path = dir.join(&file.path);
        let found = sha256_file(&path)?;
        if found != file.sha256 {
            return Err(ModelError::File {
                path,
                reason: format!(
                    "checksum {found} differs from the {} the list of experts records",
                    file.sha256
                ),
            });
        }
        let empty = Self::from_rule(d_model, &vec![None; experts], namespaces, device);
        Ok(CheckpointFile::open(&path)?.load_into(empty, device)?)
    }

    /// The routing of a model directory's experts, as `list` (from its manifest)
    /// gives it: the trained file, or the experts' rules; `None` without experts.
    pub fn of(
        dir: &Path,
        list: &ExpertList,
        (d_model, space): (usize, &LabelSpace),
        device: &Device,
    ) -> Result<Option<Self>, ModelError> {
        if list.experts.is_empty() {
            return Ok(None);
        }
        let namespaces = mixed_namespaces(space);
        let routing = match &list.routing {
            Some(file) => {
                let shape = (d_model, list.experts.len(), namespaces);
                Self::load(dir, file, shape, device)?
            }
            None => {
                let rules: Vec<Option<f32>> = list.experts.iter().map(|e| e.open_below).collect();
                Self::from_rule(d_model, &rules, namespaces, device)
            }
        };
        Ok(Some(routing))
    }

    /// Writes the routing atomically as [`ROUTING_FILE`] in `dir`.
    pub fn save(&self, dir: &Path) -> Result<FileRef, ModelError> {
        let path = dir.join(ROUTING_FILE);
        save_module(self, Default::default(), &path)?;
        Ok(FileRef {
            path: ROUTING_FILE.into(),
            sha256: sha256_file(&path)?,
        })
    }
}

/// The namespaces the experts' logits are mixed into: the shared CTA head's (fine-tuning's
/// added namespaces have heads of their own, which no expert knows), then CPA's.
pub fn mixed_namespaces(space: &LabelSpace) -> usize {
    shared_cta_namespaces(space) + space.cpa.len()
}

/// The number [`mixed_namespaces`] gives the namespace `name` of `task`; `None` for one the
/// experts' logits are not mixed into (a fine-tuned CTA namespace) or that does not exist.
pub fn mix_namespace(space: &LabelSpace, task: Task, name: &str) -> Option<usize> {
    match task {
        Task::Cta => space.cta[..shared_cta_namespaces(space)]
            .iter()
            .position(|n| n.name == name),
        Task::Cpa => (space.cpa.iter().position(|n| n.name == name))
            .map(|i| shared_cta_namespaces(space) + i),
    }
}

fn shared_cta_namespaces(space: &LabelSpace) -> usize {
    space.cta.iter().take_while(|n| n.head.is_none()).count()
}

/// For each label of the shared head of `task`, in flat order, its namespace as the mix
/// numbers them ([`mixed_namespaces`]).
pub fn label_namespaces(space: &LabelSpace, task: Task) -> Vec<usize> {
    let (list, offset) = match task {
        Task::Cta => (&space.cta[..shared_cta_namespaces(space)], 0),
        Task::Cpa => (&space.cpa[..], shared_cta_namespaces(space)),
    };
    list.iter()
        .enumerate()
        .flat_map(|(n, ns)| std::iter::repeat_n(offset + n, ns.labels.len()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removing_an_expert_keeps_the_others_gates_and_weights() {
        let device = Device::flex();
        let mut routing = ExpertRouting::from_rule(3, &[Some(0.9), None, Some(0.5)], 2, &device);
        // Move every weight off the rule, so that a wrong row or column would show.
        let shape = routing.router.gate.weight.shape().dims::<2>();
        let values: Vec<f32> = (0..shape[0] * shape[1]).map(|v| v as f32 * 0.01).collect();
        routing.router.gate.weight =
            Param::from_tensor(Tensor::from_data(TensorData::new(values, shape), &device));
        let mix: Vec<f32> = (0..6).map(|v| v as f32).collect();
        routing.mix.weight =
            Param::from_tensor(Tensor::from_data(TensorData::new(mix, [2, 3]), &device));
        let reduced = routing.without_expert(1);
        assert_eq!(reduced.experts(), 2);
        let rows = |t: Tensor<2>| t.into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(rows(reduced.mix.weight.val()), [0., 2., 3., 5.]);
        let full = rows(routing.router.gate.weight.val()); // [3 + 3, 3]
        let kept = rows(reduced.router.gate.weight.val()); // [3 + 2, 2]
        let mut expected = Vec::new();
        for row in [0, 1, 2, 3, 5] {
            expected.extend([full[row * 3], full[row * 3 + 2]]);
        }
        assert_eq!(kept, expected);
        let bias = |r: &ExpertRouting| r.router.gate.bias.as_ref().unwrap().val();
        let full_bias = bias(&routing).into_data().try_to_vec::<f32>().unwrap();
        let kept_bias = bias(&reduced).into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(kept_bias, [full_bias[0], full_bias[2]]);
        // Adding an expert and removing it again gives the routing back.
        let again = reduced.with_expert(Some(0.3)).without_expert(2);
        assert_eq!(rows(again.router.gate.weight.val()), kept);
        assert_eq!(rows(again.mix.weight.val()), [0., 2., 3., 5.]);
    }

    fn gates(routing: &ExpertRouting, pooled: Vec<f32>, confidence: &[Vec<f32>]) -> Vec<bool> {
        let device = Device::flex();
        let d = pooled.len() / confidence.len();
        let pooled = Tensor::from_data(TensorData::new(pooled, [confidence.len(), d]), &device);
        let decision = routing
            .router
            .decide(ExpertRouting::features(pooled, confidence));
        decision.active.into_iter().flatten().collect()
    }

    #[test]
    fn the_rule_opens_below_its_threshold_whatever_the_read() {
        let routing = ExpertRouting::from_rule(3, &[Some(0.95), None], 2, &Device::flex());
        let confidence = vec![vec![0.94, 0.2], vec![0.96, 0.99], vec![0.0, 1.0]];
        let pooled = vec![5.0, -3.0, 1.0, 0.0, 0.0, 0.0, -9.0, 2.0, 7.0];
        assert_eq!(
            gates(&routing, pooled, &confidence),
            vec![true, true, false, true, true, true]
        );
        // The mix starts as the plain average.
        assert_eq!(routing.mix.host_weights(), vec![vec![1.0, 1.0]; 2]);
    }

    #[test]
    fn an_added_expert_follows_its_rule_and_the_others_keep_their_gates() {
        let device = Device::flex();
        let mut routing = ExpertRouting::from_rule(2, &[Some(0.5)], 1, &device);
        // A trained first gate: it also reads the pooled read.
        routing.router.gate.weight =
            routing.router.gate.weight.map(|_| {
                Tensor::from_data(TensorData::new(vec![3.0f32, 0.0, -20.0], [3, 1]), &device)
            });
        let grown = routing.with_expert(Some(0.9));
        assert_eq!(grown.experts(), 2);
        let pooled = vec![1.0, 0.0, 0.0, 0.0];
        // Table 0: pooled 1 lifts the first gate above its rule (σ(3 + 10 − 20·0.6) > ½).
        let before = gates(&routing, pooled.clone(), &[vec![0.6], vec![0.6]]);
        let after = gates(&grown, pooled, &[vec![0.6, 0.95], vec![0.6, 0.8]]);
        assert_eq!(before, vec![true, false]);
        assert_eq!(after, vec![true, false, false, true]);
        assert_eq!(grown.mix.host_weights(), vec![vec![1.0, 1.0]]);
    }

    #[test]
    fn a_saved_routing_reads_back_and_a_changed_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let device = Device::flex();
        let routing = ExpertRouting::from_rule(2, &[Some(0.5)], 3, &device);
        let file = routing.save(dir.path()).unwrap();
        let loaded = ExpertRouting::load(dir.path(), &file, (2, 1, 3), &device).unwrap();
        let confidence = vec![vec![0.4], vec![0.6]];
        let pooled = vec![0.0; 4];
        assert_eq!(
            gates(&loaded, pooled.clone(), &confidence),
            gates(&routing, pooled, &confidence)
        );
        let wrong = FileRef {
            sha256: "0".repeat(64),
            ..file
        };
        let error = ExpertRouting::load(dir.path(), &wrong, (2, 1, 3), &device).unwrap_err();
        assert!(error.to_string().contains(ROUTING_FILE), "{error}");
    }
}
