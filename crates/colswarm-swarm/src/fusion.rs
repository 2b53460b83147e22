//! Masked fusion of the primary's recurrent state with the active specialists' states.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor};

use crate::tensor_index::param_without_index;

/// How states are combined. Agent 0 is always the primary; agents `1..=n` the specialists.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum FusionMode {
    /// Per-head content scores `qᵀ·Ŝ·p` (Ŝ = S/‖S‖_F, so the scale of a state cannot saturate
    /// the softmax) plus a per-agent bias, softmax over the primary and the active specialists.
    WeightedSum,
    /// Learned per-(agent, head) logits, softmax over the primary and the active specialists.
    Gated,
    /// Residual low-rank projection of each active specialist's difference to the primary:
    /// `S_f = S_p + Σ_active (S_i − S_p)·U_i·V_iᵀ` per head (`U`, `V`: `N × rank`, `U = 0` at
    /// initialisation).
    ConcatProject,
}

impl FusionMode {
    /// Every mode, in the order the command line lists them.
    pub const ALL: [FusionMode; 3] = [
        FusionMode::WeightedSum,
        FusionMode::Gated,
        FusionMode::ConcatProject,
    ];

    /// The command-line name (`weighted-sum`, `gated`, `concat-project`).
    pub fn name(self) -> &'static str {
        match self {
            FusionMode::WeightedSum => "weighted-sum",
            FusionMode::Gated => "gated",
            FusionMode::ConcatProject => "concat-project",
        }
    }
}

impl std::str::FromStr for FusionMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FusionMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = FusionMode::ALL.iter().map(|m| m.name()).collect();
                format!(
                    "unknown fusion `{s}` (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// Configuration of a [`StateFusion`].
#[derive(Config, Debug, PartialEq)]
pub struct StateFusionConfig {
    /// Combination rule.
    pub mode: FusionMode,
    /// Primary blocks (one fusion per block).
    pub layers: usize,
    /// Primary heads.
    pub heads: usize,
    /// Primary head size `N`.
    pub head_size: usize,
    /// Number of specialists.
    pub n_specialists: usize,
    /// Rank of the `ConcatProject` maps.
    #[config(default = 8)]
    pub rank: usize,
    /// Initial logit advantage of the primary: with one active specialist its weight starts at
    /// `σ(primary_bias)` (0.88 for 2), so the fused state starts close to the primary's.
    #[config(default = 2.0)]
    pub primary_bias: f64,
    /// Scale each specialist's contribution by its router gate `g_i` (adds `log g_i` to its
    /// logit), so the supervised loss also trains the router.
    #[config(default = true)]
    pub gate_weighting: bool,
}

/// Masked state fusion (docs/ORCHESTRATOR.md §6): includes the primary's own state, ignores
/// inactive specialists entirely, and returns exactly the primary's state when none is active.
#[derive(Module, Debug)]
pub struct StateFusion {
    /// Per-agent logit bias `[layers, agents, heads]` (`WeightedSum`, `Gated`; `None` there
    /// counts as all zeros).
    pub agent_bias: Option<Param<Tensor<3>>>,
    /// Content query vectors `[layers, heads, N]` (`WeightedSum`).
    pub query: Option<Param<Tensor<3>>>,
    /// Content probe vectors `[layers, heads, N]` (`WeightedSum`).
    pub probe: Option<Param<Tensor<3>>>,
    /// `[layers, specialists, heads, N, rank]` (`ConcatProject`).
    pub project_u: Option<Param<Tensor<5>>>,
    /// `[layers, specialists, heads, N, rank]` (`ConcatProject`).
    pub project_v: Option<Param<Tensor<5>>>,
    gate_weighting: bool,
}

/// Mask value for inactive agents: exp underflows to exactly 0 in f32.
const MASKED: f32 = -1e9;

impl StateFusionConfig {
    /// Builds the fusion layer.
    pub fn init(&self, device: &Device) -> StateFusion {
        let (l, h, n, s, r) = (
            self.layers,
            self.heads,
            self.head_size,
            self.n_specialists,
            self.rank,
        );
        let agent_bias = || {
            let bias = Tensor::<3>::zeros([l, s + 1, h], device);
            let primary = Tensor::<3>::full([l, 1, h], self.primary_bias, device);
            Param::from_tensor(bias.slice_assign([0..l, 0..1, 0..h], primary))
        };
        let unit = |scale: f64| {
            Param::from_tensor(Tensor::<3>::full(
                [l, h, n],
                scale / (n as f64).sqrt(),
                device,
            ))
        };
        match self.mode {
            FusionMode::WeightedSum => StateFusion {
                agent_bias: Some(agent_bias()),
                query: Some(unit(1.0)),
                probe: Some(unit(1.0)),
                project_u: None,
                project_v: None,
                gate_weighting: self.gate_weighting,
            },
            FusionMode::Gated => StateFusion {
                agent_bias: Some(agent_bias()),
                query: None,
                probe: None,
                project_u: None,
                project_v: None,
                gate_weighting: self.gate_weighting,
            },
            FusionMode::ConcatProject => StateFusion {
                agent_bias: None,
                query: None,
                probe: None,
                project_u: Some(Param::from_tensor(Tensor::zeros([l, s, h, n, r], device))),
                project_v: Some(Param::from_tensor(Tensor::<5>::full(
                    [l, s, h, n, r],
                    1.0 / (n as f64).sqrt(),
                    device,
                ))),
                gate_weighting: self.gate_weighting,
            },
        }
    }
}

impl StateFusion {
    /// This fusion without specialist `i`'s parameters (its agent bias and, for
    /// `ConcatProject`, its projections); the primary's and the others' are unchanged.
    pub fn without_specialist(&self, i: usize) -> StateFusion {
        StateFusion {
            // Agent 0 is the primary; specialist i is agent i + 1.
            agent_bias: self
                .agent_bias
                .as_ref()
                .map(|b| param_without_index(b, 1, i + 1)),
            query: self.query.clone(),
            probe: self.probe.clone(),
            project_u: self
                .project_u
                .as_ref()
                .map(|u| param_without_index(u, 1, i)),
            project_v: self
                .project_v
                .as_ref()
                .map(|v| param_without_index(v, 1, i)),
            gate_weighting: self.gate_weighting,
        }
    }

    /// Fuses one layer's states.
    ///
    /// Only the specialists listed in `specialists` take part (by router index); the orchestrator
    /// lists those active for at least one table, so cost grows with the number active, not with
    /// the number of specialists.
    ///
    /// # Shapes
    ///
    /// - `primary`: `[batch, heads, N, N]`
    /// - `specialists`: `(index, state)` pairs, each state `[batch, heads, N, N]` (already
    ///   aligned; rows where the specialist is inactive are ignored, whatever they hold)
    /// - `mask`, `gates`: `[batch, n_specialists]` (1.0 = active; router probabilities)
    /// - returns `[batch, heads, N, N]`
    pub fn forward_layer(
        &self,
        layer: usize,
        primary: Tensor<4>,
        specialists: &[(usize, Tensor<4>)],
        mask: Tensor<2>,
        gates: Tensor<2>,
    ) -> Tensor<4> {
        let [batch, heads, n, _] = primary.dims();
        if specialists.is_empty() {
            return primary;
        }
        let column = |t: &Tensor<2>, i: usize| t.clone().narrow(1, i, 1);
        let active_rows = |i: usize| column(&mask, i).reshape([batch, 1, 1, 1]);
        let states = active_states(specialists, &mask);

        if let (Some(u), Some(v)) = (&self.project_u, &self.project_v) {
            let mut fused = primary.clone();
            for ((i, _), state) in specialists.iter().zip(states) {
                let projection = low_rank(u, v, layer, *i).expand([batch, heads, n, n]);
                let mut weight = active_rows(*i);
                if self.gate_weighting {
                    weight = weight * column(&gates, *i).reshape([batch, 1, 1, 1]);
                }
                fused = fused + (state - primary.clone()).matmul(projection) * weight;
            }
            return fused;
        }

        let agents = specialists.len() + 1;
        // Agent 0 is the primary; agent k ≥ 1 is specialists[k − 1].
        let agent_rows: Vec<i64> = std::iter::once(0)
            .chain(specialists.iter().map(|(i, _)| *i as i64 + 1))
            .collect();
        let device = primary.device();
        let agent_index = Tensor::<1, burn::tensor::Int>::from_data(agent_rows.as_slice(), &device);
        let spec_index = Tensor::<1, burn::tensor::Int>::from_data(&agent_rows[1..], &device) - 1;
        // A public field a caller may clear: no bias is a zero bias, not a panic.
        let bias = match &self.agent_bias {
            Some(b) => {
                let [_, all_agents, _] = b.dims();
                b.val()
                    .narrow(0, layer, 1)
                    .reshape([all_agents, heads])
                    .select(0, agent_index)
                    .reshape([1, agents, heads])
            }
            None => Tensor::zeros([1, agents, heads], &device),
        };
        let stacked = Tensor::stack::<5>(std::iter::once(primary).chain(states).collect(), 1); // [batch, agents, heads, N, N]
        let mut logits = bias.expand([batch, agents, heads]);
        if let (Some(query), Some(probe)) = (&self.query, &self.probe) {
            logits = logits + state_scores(query, probe, layer, &stacked);
        }
        let own_mask = mask.select(1, spec_index.clone());
        if self.gate_weighting {
            let log_gates =
                gates
                    .select(1, spec_index)
                    .clamp_min(1e-6)
                    .log()
                    .reshape([batch, agents - 1, 1]);
            let primary_zero = Tensor::<3>::zeros([batch, 1, 1], &device);
            logits = logits + Tensor::cat(vec![primary_zero, log_gates], 1);
        }
        let ones = Tensor::<2>::ones([batch, 1], &device);
        let agent_mask = Tensor::cat(vec![ones, own_mask], 1)
            .reshape([batch, agents, 1])
            .expand([batch, agents, heads]);
        let logits = logits.mask_fill(agent_mask.equal_elem(0.0), MASKED);
        let weights = burn::tensor::activation::softmax(logits, 1);
        // Σ_agents weights · states: the fused kernel on Flex and on CubeCL devices.
        colswarm_kernels::fuse_states(stacked, weights)
    }
}

/// Each specialist's state with the rows of tables where it is inactive zeroed, so that no NaN
/// or garbage can leak through a zero weight (0 · NaN is NaN).
///
/// # Shapes
///
/// - `specialists`: `(index, state)` pairs, each state `[batch, heads, N, N]`
/// - `mask`: `[batch, n_specialists]` (1.0 = active)
fn active_states(specialists: &[(usize, Tensor<4>)], mask: &Tensor<2>) -> Vec<Tensor<4>> {
    specialists
        .iter()
        .map(|(i, s)| {
            let [batch, heads, n, _] = s.dims();
            let active = mask.clone().narrow(1, *i, 1).reshape([batch, 1, 1, 1]);
            let keep = active.equal_elem(1.0).expand([batch, heads, n, n]);
            s.clone().mask_fill(keep.bool_not(), 0.0)
        })
        .collect()
}

/// Layer `layer`'s low-rank map `U·Vᵀ` of specialist `i` (concat-project fusion).
///
/// # Shapes
///
/// - `u`, `v`: `[layers, specialists, heads, N, rank]`
/// - returns `[1, heads, N, N]`
fn low_rank(u: &Param<Tensor<5>>, v: &Param<Tensor<5>>, layer: usize, i: usize) -> Tensor<4> {
    let pick = |p: Tensor<5>| {
        let [_, _, h, n, r] = p.dims();
        p.narrow(0, layer, 1).narrow(1, i, 1).reshape([1, h, n, r])
    };
    pick(u.val()).matmul(pick(v.val()).swap_dims(2, 3))
}

/// Each agent's score per head: `qᵀ · (S / ‖S‖) · p` with layer `layer`'s query and probe
/// vectors, on every agent's state `S` scaled to unit norm.
///
/// # Shapes
///
/// - `query`, `probe`: `[layers, heads, N]`
/// - `stacked`: `[batch, agents, heads, N, N]`
/// - returns `[batch, agents, heads]`
fn state_scores(
    query: &Param<Tensor<3>>,
    probe: &Param<Tensor<3>>,
    layer: usize,
    stacked: &Tensor<5>,
) -> Tensor<3> {
    let [batch, agents, heads, n, _] = stacked.dims();
    let q = query.val().narrow(0, layer, 1).reshape([1, 1, heads, 1, n]);
    let p = probe.val().narrow(0, layer, 1).reshape([1, 1, heads, n, 1]);
    let norm = stacked
        .clone()
        .powf_scalar(2.0)
        .sum_dim(4)
        .sum_dim(3)
        .sqrt()
        + 1e-6; // [batch, agents, heads, 1, 1]
    q.expand([batch, agents, heads, 1, n])
        .matmul(stacked.clone() / norm)
        .matmul(p.expand([batch, agents, heads, n, 1]))
        .reshape([batch, agents, heads])
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Distribution, TensorData};
    use colswarm_testing::perturb;

    #[test]
    fn every_mode_parses_from_its_command_line_name_and_others_are_refused() {
        for mode in FusionMode::ALL {
            assert_eq!(mode.name().parse::<FusionMode>(), Ok(mode));
        }
        let err = "weighted_sum".parse::<FusionMode>().unwrap_err();
        assert!(err.contains("weighted-sum, gated, concat-project"), "{err}");
    }

    const MODES: [FusionMode; 3] = [
        FusionMode::WeightedSum,
        FusionMode::Gated,
        FusionMode::ConcatProject,
    ];

    fn random(shape: [usize; 4]) -> Tensor<4> {
        Tensor::random(shape, Distribution::Normal(0.0, 1.0), &Device::flex())
    }

    fn mask(rows: Vec<f32>, n: usize) -> Tensor<2> {
        let batch = rows.len() / n;
        Tensor::from_data(TensorData::new(rows, [batch, n]), &Device::flex())
    }

    #[test]
    fn nothing_active_is_exactly_the_primary_in_every_mode() {
        for mode in MODES {
            let fusion = perturb(
                StateFusionConfig::new(mode, 1, 2, 4, 3).init(&Device::flex()),
                5,
                0.7,
            );
            let primary = random([2, 2, 4, 4]);
            let specialists: Vec<_> = (0..3).map(|i| (i, random([2, 2, 4, 4]) * 50.0)).collect();
            let out = fusion.forward_layer(
                0,
                primary.clone(),
                &specialists,
                mask(vec![0.0; 6], 3),
                mask(vec![0.9; 6], 3),
            );
            assert_eq!(out.into_data(), primary.into_data(), "{mode:?}");
        }
    }

    #[test]
    fn inactive_specialists_cannot_change_the_result_even_if_nan() {
        for mode in MODES {
            let fusion = perturb(
                StateFusionConfig::new(mode, 1, 2, 4, 2).init(&Device::flex()),
                6,
                0.7,
            );
            let primary = random([1, 2, 4, 4]);
            let active = random([1, 2, 4, 4]);
            let m = mask(vec![1.0, 0.0], 2);
            let g = mask(vec![0.7, 0.2], 2);
            let a = fusion.forward_layer(
                0,
                primary.clone(),
                &[(0, active.clone()), (1, random([1, 2, 4, 4]))],
                m.clone(),
                g.clone(),
            );
            let poisoned = Tensor::<4>::full([1, 2, 4, 4], f32::NAN, &Device::flex());
            let b = fusion.forward_layer(0, primary, &[(0, active), (1, poisoned)], m, g);
            assert_eq!(a.into_data(), b.into_data(), "{mode:?}");
        }
    }

    #[test]
    fn a_missing_agent_bias_counts_as_zero() {
        let device = Device::flex();
        for mode in [FusionMode::WeightedSum, FusionMode::Gated] {
            let mut fusion = perturb(
                StateFusionConfig::new(mode, 1, 2, 4, 2).init(&device),
                3,
                0.5,
            );
            let (primary, specialist) = (random([2, 2, 4, 4]), random([2, 2, 4, 4]));
            let run = |fusion: &StateFusion| {
                fusion.forward_layer(
                    0,
                    primary.clone(),
                    &[(1, specialist.clone())],
                    mask(vec![1.0; 4], 2),
                    mask(vec![0.7; 4], 2),
                )
            };
            fusion.agent_bias = Some(Param::from_tensor(Tensor::zeros([1, 3, 2], &device)));
            let zero = run(&fusion);
            fusion.agent_bias = None;
            let missing = run(&fusion);
            assert_eq!(zero.into_data(), missing.into_data(), "{mode:?}");
        }
    }

    #[test]
    fn equal_states_are_a_fixed_point_of_the_softmax_modes() {
        // docs/ORCHESTRATOR.md §9 F1: weights sum to one.
        for mode in [FusionMode::WeightedSum, FusionMode::Gated] {
            let fusion = perturb(
                StateFusionConfig::new(mode, 1, 2, 4, 2).init(&Device::flex()),
                7,
                0.7,
            );
            let s = random([3, 2, 4, 4]);
            let out = fusion.forward_layer(
                0,
                s.clone(),
                &[(0, s.clone()), (1, s.clone())],
                mask(vec![1.0; 6], 2),
                mask(vec![0.6; 6], 2),
            );
            out.into_data()
                .assert_approx_eq::<f32>(&s.into_data(), burn::tensor::Tolerance::absolute(1e-5));
        }
    }

    #[test]
    fn gated_weights_match_hand_values() {
        // docs/ORCHESTRATOR.md §9 F3 with the primary as agent 0: logits [ln 3, 0] → weights
        // [0.75, 0.25]; primary 4, specialist 0 → 3.
        let device = Device::flex();
        let mut fusion = StateFusionConfig::new(FusionMode::Gated, 1, 1, 1, 1)
            .with_gate_weighting(false)
            .init(&device);
        fusion.agent_bias = Some(Param::from_tensor(Tensor::from_data(
            TensorData::new(vec![3f32.ln(), 0.0], [1, 2, 1]),
            &device,
        )));
        let primary = Tensor::<4>::full([1, 1, 1, 1], 4.0, &device);
        let specialist = Tensor::<4>::zeros([1, 1, 1, 1], &device);
        let out = fusion.forward_layer(
            0,
            primary,
            &[(0, specialist)],
            mask(vec![1.0], 1),
            mask(vec![1.0], 1),
        );
        assert!((out.into_scalar::<f32>() - 3.0).abs() < 1e-6);
    }

    #[test]
    fn weighted_sum_scores_use_normalised_states() {
        // N = 2, H = 1, q = p = e0, bias 0, no gates. Primary S = diag(1, 0)·5 → Ŝ00 = 1;
        // specialist S = diag(0, 1)·100 → Ŝ00 = 0. Weights softmax([1, 0]) = [0.731059, 0.268941].
        let device = Device::flex();
        let mut fusion = StateFusionConfig::new(FusionMode::WeightedSum, 1, 1, 2, 1)
            .with_gate_weighting(false)
            .init(&device);
        let e0 = || {
            Param::from_tensor(Tensor::from_data(
                TensorData::new(vec![1f32, 0.0], [1, 1, 2]),
                &device,
            ))
        };
        fusion.query = Some(e0());
        fusion.probe = Some(e0());
        fusion.agent_bias = Some(Param::from_tensor(Tensor::zeros([1, 2, 1], &device)));
        let primary = Tensor::<4>::from_data(
            TensorData::new(vec![5f32, 0.0, 0.0, 0.0], [1, 1, 2, 2]),
            &device,
        );
        let specialist = Tensor::<4>::from_data(
            TensorData::new(vec![0f32, 0.0, 0.0, 100.0], [1, 1, 2, 2]),
            &device,
        );
        let out = fusion
            .forward_layer(
                0,
                primary,
                &[(0, specialist)],
                mask(vec![1.0], 1),
                mask(vec![1.0], 1),
            )
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        let w = 1.0 / (1.0 + (-1.0f32).exp());
        let expected = [5.0 * w, 0.0, 0.0, 100.0 * (1.0 - w)];
        for (o, e) in out.iter().zip(expected) {
            assert!((o - e).abs() < 1e-3, "{out:?} vs {expected:?}");
        }
    }

    #[test]
    fn concat_project_starts_at_the_primary_and_moves_when_trained() {
        let device = Device::flex();
        let config = StateFusionConfig::new(FusionMode::ConcatProject, 1, 1, 2, 1)
            .with_rank(1)
            .with_gate_weighting(false);
        let mut fusion = config.init(&device);
        let primary = Tensor::<4>::from_data(
            TensorData::new(vec![1f32, 2.0, 3.0, 4.0], [1, 1, 2, 2]),
            &device,
        );
        let specialist = Tensor::<4>::from_data(
            TensorData::new(vec![2f32, 2.0, 3.0, 6.0], [1, 1, 2, 2]),
            &device,
        );
        let at_init = fusion.forward_layer(
            0,
            primary.clone(),
            &[(0, specialist.clone())],
            mask(vec![1.0], 1),
            mask(vec![1.0], 1),
        );
        assert_eq!(at_init.into_data(), primary.clone().into_data());
        // U = V = e0 → projection e0·e0ᵀ keeps column 0 of the difference [[1, 0], [0, 2]].
        let e0 = || {
            Param::from_tensor(Tensor::from_data(
                TensorData::new(vec![1f32, 0.0], [1, 1, 1, 2, 1]),
                &device,
            ))
        };
        fusion.project_u = Some(e0());
        fusion.project_v = Some(e0());
        let out = fusion.forward_layer(
            0,
            primary,
            &[(0, specialist)],
            mask(vec![1.0], 1),
            mask(vec![1.0], 1),
        );
        assert_eq!(
            out.into_data().try_to_vec::<f32>().unwrap(),
            vec![2.0, 2.0, 3.0, 4.0]
        );
    }

    #[test]
    fn parameter_counts_are_small() {
        let device = Device::flex();
        let count = |mode| {
            StateFusionConfig::new(mode, 4, 4, 64, 3)
                .init(&device)
                .num_params()
        };
        assert_eq!(count(FusionMode::WeightedSum), 4 * 4 * 4 + 2 * 4 * 4 * 64);
        assert_eq!(count(FusionMode::Gated), 4 * 4 * 4);
        assert_eq!(count(FusionMode::ConcatProject), 2 * 4 * 3 * 4 * 64 * 8);
    }
}
