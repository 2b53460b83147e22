//! The sigmoid specialist router.

use burn::config::Config;
use burn::module::Module;
use burn::nn::Linear;
use burn::tensor::activation::sigmoid;
use burn::tensor::{Device, Tensor, TensorData};
use colswarm_rwkv::init::ParamFactory;
use rand::Rng;

use crate::tensor_index::param_without_index;

/// Configuration of a [`SpecialistRouter`].
#[derive(Config, Debug, PartialEq)]
pub struct SpecialistRouterConfig {
    /// Width of the pooled primary representation `h`.
    pub d_model: usize,
    /// Number of specialists `N`.
    pub n_specialists: usize,
    /// Inference threshold τ: specialist `i` is active when `g_i > τ` (strict).
    #[config(default = 0.5)]
    pub threshold: f64,
    /// At most this many specialists active per table (the `k` highest gates win).
    #[config(default = "None")]
    pub budget: Option<usize>,
    /// Initial gate bias: `σ(bias)` is the activation probability before training.
    #[config(default = 0.0)]
    pub initial_bias: f64,
}

/// `g = σ(W·h + b) ∈ (0,1)^N`: one independent gate per specialist.
///
/// [`SpecialistRouter::sample`] draws the training-time mask `m_i ~ Bernoulli(g_i)` and returns
/// its log-probability (the policy's action log-prob for PARL); [`SpecialistRouter::decide`]
/// thresholds at inference. Both honour the budget.
#[derive(Module, Debug)]
pub struct SpecialistRouter {
    /// `d_model → n_specialists`, with bias.
    pub gate: Linear,
    threshold: f64,
    #[module(skip)]
    budget: Option<usize>,
}

/// A routing decision for a batch of tables.
#[derive(Clone, Debug)]
pub struct RouterDecision {
    /// Gate probabilities `g`, `[batch, n]`.
    pub probs: Tensor<2>,
    /// The mask, 1.0 for active specialists, `[batch, n]` (no gradient).
    pub mask: Tensor<2>,
    /// Which specialists read each table, row-major: `active[b][i]`. The mask itself, unless
    /// it was drawn on the device ([`SpecialistRouter::sample_on_device`]): then every
    /// specialist reads every table and `mask` alone gates what they add.
    pub active: Vec<Vec<bool>>,
    /// Whether the mask was drawn on the device and never read back (`active` is then all
    /// `true`).
    pub on_device: bool,
    /// `Σ_i m_i·log g_i + (1−m_i)·log(1−g_i)`, `[batch]` (differentiable in `g`).
    pub log_prob: Tensor<1>,
    /// Entropy of the Bernoulli gates, `Σ_i H(g_i)`, `[batch]`.
    pub entropy: Tensor<1>,
}

impl SpecialistRouterConfig {
    /// Builds the router; the gate weights start at zero so every table starts with the same
    /// activation probability `σ(initial_bias)`.
    pub fn init(&self, device: &Device) -> SpecialistRouter {
        // Built from values, not `LinearConfig::init` + `Param::map`: a router built that way
        // took different Adam steps after a checkpoint round trip than before it (found by the
        // resume test), so resumed runs drifted.
        let params = ParamFactory::new(0, device);
        let n = self.n_specialists;
        let gate = Linear {
            weight: params.constant(0.0, [self.d_model, n]),
            bias: Some(params.constant(self.initial_bias as f32, [n])),
        };
        SpecialistRouter {
            gate,
            threshold: self.threshold,
            budget: self.budget,
        }
    }
}

/// Keeps at most `budget` of the `candidates` (indices), preferring higher probabilities; ties go
/// to the lower index so the result is deterministic.
fn apply_budget(candidates: &mut Vec<usize>, probs: &[f32], budget: Option<usize>) {
    if let Some(budget) = budget
        && candidates.len() > budget
    {
        candidates.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]).then(a.cmp(&b)));
        candidates.truncate(budget);
        candidates.sort_unstable();
    }
}

impl SpecialistRouter {
    /// Number of specialists.
    pub fn n_specialists(&self) -> usize {
        self.gate.weight.shape().dims::<2>()[1]
    }

    /// The inference threshold τ: [`SpecialistRouter::decide`] opens specialist `i` where
    /// `g_i > τ`.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// This router without specialist `i`'s gate; the others' gates are unchanged. A budget
    /// larger than the specialists left is kept as it is (it then binds nothing more).
    pub fn without_specialist(&self, i: usize) -> SpecialistRouter {
        let gate = Linear {
            weight: param_without_index(&self.gate.weight, 1, i),
            bias: self
                .gate
                .bias
                .as_ref()
                .map(|b| param_without_index(b, 0, i)),
        };
        SpecialistRouter {
            gate,
            threshold: self.threshold,
            budget: self.budget,
        }
    }

    /// Gate probabilities.
    ///
    /// # Shapes
    ///
    /// - `pooled`: `[batch, d_model]` → `[batch, n_specialists]`
    pub fn forward(&self, pooled: Tensor<2>) -> Tensor<2> {
        sigmoid(self.gate.forward(pooled))
    }

    /// Training-time decision: `m_i ~ Bernoulli(g_i)`, then the budget keeps the `k` sampled
    /// specialists with the highest gates. The log-probability is that of the final mask under
    /// the independent Bernoulli policy.
    pub fn sample<R: Rng>(&self, pooled: Tensor<2>, rng: &mut R) -> RouterDecision {
        let probs = self.forward(pooled);
        let host = host_rows(&probs);
        let active = host
            .iter()
            .map(|row| {
                let mut chosen: Vec<usize> = (0..row.len())
                    .filter(|&i| rng.random::<f32>() < row[i])
                    .collect();
                apply_budget(&mut chosen, row, self.budget);
                to_flags(&chosen, row.len())
            })
            .collect();
        decision(probs, active)
    }

    /// [`Self::sample`]'s mask, drawn where the gates are: the same uniforms, drawn from `rng`
    /// in the same order (one per table and specialist, tables in order), compared with the
    /// gates on the device, and the budget applied there, so nothing is read back to the host
    /// and a GPU need not wait. Every specialist then reads every table (`active` is all `true`;
    /// `on_device` says so), and `mask` gates what each adds.
    ///
    /// # Shapes
    ///
    /// - `pooled`: `[batch, d_model]`
    pub fn sample_on_device<R: Rng>(&self, pooled: Tensor<2>, rng: &mut R) -> RouterDecision {
        let probs = self.forward(pooled);
        let [batch, n] = probs.dims();
        let device = probs.device();
        let uniforms: Vec<f32> = (0..batch * n).map(|_| rng.random::<f32>()).collect();
        let uniforms = Tensor::<2>::from_data(TensorData::new(uniforms, [batch, n]), &device);
        let mut chosen = uniforms.lower(probs.clone().detach()).float();
        if let Some(budget) = self.budget {
            chosen = within_budget(chosen, probs.clone().detach(), budget);
        }
        let mut decision = decision_with_mask(probs, chosen, vec![vec![true; n]; batch]);
        decision.on_device = true;
        decision
    }

    /// Inference-time decision: `g_i > τ`, then the budget.
    pub fn decide(&self, pooled: Tensor<2>) -> RouterDecision {
        let probs = self.forward(pooled);
        let active = host_rows(&probs)
            .iter()
            .map(|row| {
                let mut chosen: Vec<usize> = (0..row.len())
                    .filter(|&i| f64::from(row[i]) > self.threshold)
                    .collect();
                apply_budget(&mut chosen, row, self.budget);
                to_flags(&chosen, row.len())
            })
            .collect();
        decision(probs, active)
    }

    /// The decision for a given mask (to score rollouts sampled earlier under new parameters).
    pub fn evaluate(&self, pooled: Tensor<2>, active: Vec<Vec<bool>>) -> RouterDecision {
        decision(self.forward(pooled), active)
    }
}

fn host_rows(probs: &Tensor<2>) -> Vec<Vec<f32>> {
    let [_, n] = probs.dims();
    let values = probs
        .to_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .unwrap_or_default();
    values.chunks(n.max(1)).map(<[f32]>::to_vec).collect()
}

fn to_flags(chosen: &[usize], n: usize) -> Vec<bool> {
    let mut flags = vec![false; n];
    for &i in chosen {
        flags[i] = true;
    }
    flags
}

/// Keeps, per row, the `budget` chosen specialists (`chosen` is 1 or 0) with the highest
/// gates, ties to the lower index: [`apply_budget`] on the device. A chosen specialist is kept
/// when fewer than `budget` chosen ones rank before it.
///
/// # Shapes
///
/// - `chosen`, `probs`: `[batch, n]`
fn within_budget(chosen: Tensor<2>, probs: Tensor<2>, budget: usize) -> Tensor<2> {
    let [batch, n] = chosen.dims();
    let device = chosen.device();
    // Gates lie in (0, 1): an unchosen specialist scores −1 and ranks before no chosen one.
    let score = probs * chosen.clone() + (chosen.clone() - 1.0);
    let mine = score.clone().reshape([batch, n, 1]).expand([batch, n, n]);
    let theirs = score.reshape([batch, 1, n]).expand([batch, n, n]);
    let lower_index: Vec<f32> = (0..n * n)
        .map(|k| f32::from(u8::from(k % n < k / n)))
        .collect();
    let lower_index = Tensor::<3>::from_data(TensorData::new(lower_index, [1, n, n]), &device);
    let before = theirs.clone().greater(mine.clone()).float()
        + theirs.equal(mine).float() * lower_index.expand([batch, n, n]);
    let chosen_before = before * chosen.clone().reshape([batch, 1, n]).expand([batch, n, n]);
    let rank = chosen_before.sum_dim(2).reshape([batch, n]);
    chosen * rank.lower_elem(budget as f32).float()
}

fn decision(probs: Tensor<2>, active: Vec<Vec<bool>>) -> RouterDecision {
    let [batch, n] = probs.dims();
    let flat: Vec<f32> = active
        .iter()
        .flat_map(|row| row.iter().map(|&a| if a { 1.0 } else { 0.0 }))
        .collect();
    let mask = Tensor::<2>::from_data(TensorData::new(flat, [batch, n]), &probs.device());
    decision_with_mask(probs, mask, active)
}

fn decision_with_mask(probs: Tensor<2>, mask: Tensor<2>, active: Vec<Vec<bool>>) -> RouterDecision {
    let batch = probs.dims()[0];
    // Clamp so log(0) never appears when a gate saturates.
    let p = probs.clone().clamp(1e-6, 1.0 - 1e-6);
    let q = p.clone().neg() + 1.0;
    let log_prob = (mask.clone() * p.clone().log() + (mask.clone().neg() + 1.0) * q.clone().log())
        .sum_dim(1)
        .reshape([batch]);
    let entropy = (p.clone() * p.log() + q.clone() * q.log())
        .neg()
        .sum_dim(1)
        .reshape([batch]);
    RouterDecision {
        probs,
        mask,
        active,
        on_device: false,
        log_prob,
        entropy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn router(weight: Vec<f32>, d: usize, n: usize, budget: Option<usize>) -> SpecialistRouter {
        let device = Device::flex();
        let mut router = SpecialistRouterConfig::new(d, n)
            .with_budget(budget)
            .init(&device);
        router.gate.weight = router
            .gate
            .weight
            .map(|_| Tensor::from_data(TensorData::new(weight, [d, n]), &device));
        router
    }

    fn pooled(values: Vec<f32>, d: usize) -> Tensor<2> {
        let batch = values.len() / d;
        Tensor::from_data(TensorData::new(values, [batch, d]), &Device::flex())
    }

    #[test]
    fn zero_input_gives_half_and_nothing_active_at_tau_half() {
        // docs/ORCHESTRATOR.md §9 R1: strict > at τ = 0.5.
        let r = router(vec![0.3, -0.2, 0.7, 0.1], 2, 2, None);
        let d = r.decide(pooled(vec![0.0, 0.0], 2));
        let probs = d.probs.into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(probs, vec![0.5, 0.5]);
        assert_eq!(d.active, vec![vec![false, false]]);
    }

    #[test]
    fn gate_probabilities_and_mask_match_hand_values() {
        // docs/ORCHESTRATOR.md §9 R2: W = [[1,0],[0,-1]] (h·W with W [d, n]), h = [2, 1].
        let r = router(vec![1.0, 0.0, 0.0, -1.0], 2, 2, None);
        let d = r.decide(pooled(vec![2.0, 1.0], 2));
        let probs = d.probs.into_data().try_to_vec::<f32>().unwrap();
        assert!((probs[0] - 0.880797).abs() < 1e-5 && (probs[1] - 0.268941).abs() < 1e-5);
        assert_eq!(d.active, vec![vec![true, false]]);
        // log-prob of [1, 0] = log 0.880797 + log(1 − 0.268941)
        let lp = d.log_prob.into_scalar::<f32>();
        assert!(
            (lp - (0.880797f32.ln() + 0.731059f32.ln())).abs() < 1e-5,
            "{lp}"
        );
    }

    #[test]
    fn budget_keeps_the_highest_gates() {
        let r = router(vec![3.0, 2.0, 1.0, 4.0], 1, 4, Some(2));
        let d = r.decide(pooled(vec![1.0], 1));
        assert_eq!(d.active, vec![vec![true, false, false, true]]);
    }

    #[test]
    fn sampling_frequency_follows_the_gate() {
        let r = router(vec![1.0, -1.0], 1, 2, None);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let rows = vec![2.0f32; 2000];
        let d = r.sample(pooled(rows, 1), &mut rng);
        let rate = |i: usize| d.active.iter().filter(|row| row[i]).count() as f32 / 2000.0;
        // g = σ(2) = 0.881 and σ(−2) = 0.119
        assert!((rate(0) - 0.881).abs() < 0.03, "{}", rate(0));
        assert!((rate(1) - 0.119).abs() < 0.03, "{}", rate(1));
    }

    #[test]
    fn masks_drawn_on_the_device_are_the_host_masks_budget_and_ties_included() {
        let device = Device::flex();
        let rows = |t: &Tensor<2>| -> Vec<Vec<bool>> {
            let [_, n] = t.dims();
            let v = t.clone().into_data().try_to_vec::<f32>().unwrap();
            v.chunks(n)
                .map(|r| r.iter().map(|&x| x == 1.0).collect())
                .collect()
        };
        for budget in [None, Some(1), Some(2), Some(4)] {
            // Five specialists, two of them with equal weights (ties on every table).
            let weight = vec![0.8, -0.3, 0.5, 0.5, 1.2, -0.6, 0.4, 0.9, 0.9, -1.1];
            let r = router(weight, 2, 5, budget);
            let x = Tensor::<2>::random([64, 2], burn::tensor::Distribution::Default, &device);
            let host = r.sample(x.clone(), &mut ChaCha8Rng::seed_from_u64(7));
            let on_device = r.sample_on_device(x, &mut ChaCha8Rng::seed_from_u64(7));
            assert!(on_device.on_device && !host.on_device);
            assert_eq!(rows(&on_device.mask), host.active, "budget {budget:?}");
            assert!(on_device.active.iter().flatten().all(|&a| a));
            let (a, b) = (
                host.log_prob.into_data().try_to_vec::<f32>().unwrap(),
                on_device.log_prob.into_data().try_to_vec::<f32>().unwrap(),
            );
            assert_eq!(a, b);
        }
    }

    #[test]
    fn entropy_is_maximal_at_half() {
        let r = router(vec![0.0, 0.0], 1, 2, None);
        let d = r.decide(pooled(vec![1.0], 1));
        let h = d.entropy.into_scalar::<f32>();
        assert!((h - 2.0 * std::f32::consts::LN_2).abs() < 1e-5);
    }
}
