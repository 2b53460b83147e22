//! RWKV-7 time mixing: token shift, projections, the WKV-7 recurrence and its read-out.

use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::tensor::Tensor;
use colswarm_kernels::{Then, linear, linear_then, token_shift_mix};

use crate::config::RwkvConfig;
use crate::init::ParamFactory;
use crate::padding::Padding;

/// `e^{-0.5}`: the decay scale of RWKV-7, `log w = −e^{−0.5}·σ(z)`.
const DECAY_SCALE: f32 = 0.606_530_66;

/// RWKV-7 time mixing of one block (docs/RWKV7.md §2–§5).
///
/// Parameter names follow the released RWKV-7 checkpoints (`x_r` … `x_g`, `w0..w2`, `a0..a2`,
/// `v0..v2`, `g1`, `g2`, `k_k`, `k_a`, `r_k`, `ln_x`); LoRA matrices are `[d, rank]` then
/// `[rank, d]`, applied as `x · A · B`.
#[derive(Module, Debug)]
pub struct TimeMix {
    /// Token-shift lerp weights of the six streams r, w, k, v, a, g: `[d]` each.
    pub x_r: Param<Tensor<1>>,
    /// See `x_r`.
    pub x_w: Param<Tensor<1>>,
    /// See `x_r`.
    pub x_k: Param<Tensor<1>>,
    /// See `x_r`.
    pub x_v: Param<Tensor<1>>,
    /// See `x_r`.
    pub x_a: Param<Tensor<1>>,
    /// See `x_r`.
    pub x_g: Param<Tensor<1>>,
    /// Decay bias `[d]` and LoRA `[d, rank]`, `[rank, d]`: `z = w0 + tanh(x·w1)·w2`.
    pub w0: Param<Tensor<1>>,
    /// See `w0`.
    pub w1: Param<Tensor<2>>,
    /// See `w0`.
    pub w2: Param<Tensor<2>>,
    /// In-context learning rate `a = σ(a0 + x·a1·a2)`.
    pub a0: Param<Tensor<1>>,
    /// See `a0`.
    pub a1: Param<Tensor<2>>,
    /// See `a0`.
    pub a2: Param<Tensor<2>>,
    /// Value-residual gate `ν = σ(v0 + x·v1·v2)`; absent in the first block.
    pub v0: Option<Param<Tensor<1>>>,
    /// See `v0`.
    pub v1: Option<Param<Tensor<2>>>,
    /// See `v0`.
    pub v2: Option<Param<Tensor<2>>>,
    /// Output gate `g = σ(x·g1)·g2`.
    pub g1: Param<Tensor<2>>,
    /// See `g1`.
    pub g2: Param<Tensor<2>>,
    /// Removal-key scale ξ: `κ = k ⊙ k_k`, normalised per head.
    pub k_k: Param<Tensor<1>>,
    /// Replacement-key lerp α_k: `k̃ = k ⊙ (1 + (a − 1) ⊙ k_a)`.
    pub k_a: Param<Tensor<1>>,
    /// Bonus weights ρ, `[heads, head_size]`.
    pub r_k: Param<Tensor<2>>,
    /// Receptance projection.
    pub receptance: Linear,
    /// Key projection.
    pub key: Linear,
    /// Value projection.
    pub value: Linear,
    /// Output projection.
    pub output: Linear,
    /// Per-head group norm of the read-out.
    pub ln_x: HeadNorm,
    heads: usize,
    head_size: usize,
}

/// Per-head normalisation (GroupNorm with one group per head) with eps = `head_size · 1e-5`.
#[derive(Module, Debug)]
pub struct HeadNorm {
    /// Per-channel scale `[d]`.
    pub weight: Param<Tensor<1>>,
    /// Per-channel shift `[d]`.
    pub bias: Param<Tensor<1>>,
    heads: usize,
    epsilon: f64,
}

impl HeadNorm {
    /// # Shapes
    ///
    /// - `x`: `[m, d]` → `[m, d]`
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let [m, d] = x.dims();
        let n = d / self.heads;
        // Each head's values normalised alone: a layer norm over `n` without scale or shift
        // (the fused kernel), then the per-channel ones.
        let unit = Tensor::<1>::ones([n], &x.device());
        let normed = colswarm_kernels::layer_norm(
            x.reshape([m, self.heads, n]),
            unit.clone(),
            unit.zeros_like(),
            self.epsilon as f32,
        );
        normed.reshape([m, d]) * self.weight.val().unsqueeze() + self.bias.val().unsqueeze()
    }
}

/// The per-token quantities of one time-mix step, each `[m, d]` (`m` tokens).
#[derive(Debug)]
pub(crate) struct Projected {
    pub r: Tensor<2>,
    pub log_w: Tensor<2>,
    /// Replacement key k̃.
    pub k: Tensor<2>,
    /// Value after the value residual.
    pub v: Tensor<2>,
    /// `−κ̂`.
    pub removal: Tensor<2>,
    /// `κ̂ ⊙ a`.
    pub removal_rate: Tensor<2>,
    pub g: Tensor<2>,
    /// The first block's value, shared with later blocks.
    pub v_first: Tensor<2>,
}

/// `then(x · A · B)` (a LoRA product), with `x` `[m, d]`, `then` applied as the second
/// product is written.
fn lora_then(x: Tensor<2>, a: &Param<Tensor<2>>, b: &Param<Tensor<2>>, then: Then) -> Tensor<2> {
    linear_then(linear(x, a.val()), b.val(), then)
}

impl TimeMix {
    // Over 80 lines: one initialiser per parameter, in the order their random draws are made.
    pub(crate) fn new(config: &RwkvConfig, layer: usize, params: &mut ParamFactory<'_>) -> Self {
        let d = config.d_model;
        let (heads, head_size) = (config.n_heads(), config.head_size);
        let layers = config.n_layers as f32;
        let ratio_0_to_1 = if config.n_layers > 1 {
            layer as f32 / (layers - 1.0)
        } else {
            0.0
        };
        let ratio_1_to_0 = 1.0 - layer as f32 / layers;
        let channel = |i: usize| i as f32 / d as f32;
        // Official init (docs/RWKV7.md §7): lerps 1 − (i/d)^(c·(1 − l/L)).
        let lerp = |c: f32| {
            let values = (0..d)
                .map(|i| 1.0 - channel(i).powf(c * ratio_1_to_0))
                .collect();
            params.from_values(values, [d])
        };
        let (x_r, x_w, x_k, x_v, x_a, x_g) = (
            lerp(0.2),
            lerp(0.9),
            lerp(0.7),
            lerp(0.7),
            lerp(0.9),
            lerp(0.2),
        );
        // Decay bias: a −7…−2 ramp (slow to fast channels) plus 0.5.
        let w0 = params.from_values(
            (0..d)
                .map(|i| {
                    let x = i as f32 / (d.max(2) - 1) as f32;
                    -7.0 + 5.0 * x.powf(0.85 + ratio_0_to_1.sqrt()) + 0.5
                })
                .collect(),
            [d],
        );
        let v0_values = (0..d).map(|i| 0.73 - 0.4 * channel(i)).collect();
        let (rw, ra, rv, rg) = (
            config.decay_lora_rank(),
            config.icl_lora_rank(),
            config.value_lora_rank(),
            config.gate_lora_rank(),
        );
        let proj_bound = 0.5 / (d as f32).sqrt();
        let has_value_residual = layer > 0;
        let square = |params: &mut ParamFactory<'_>, bound: f32| Linear {
            weight: params.uniform(bound, [d, d]),
            bias: None,
        };
        Self {
            x_r,
            x_w,
            x_k,
            x_v,
            x_a,
            x_g,
            w0,
            // First LoRA factor zero, second small: the projection starts at its bias.
            w1: params.constant(0.0, [d, rw]),
            w2: params.uniform(0.1, [rw, d]),
            a0: params.constant(-0.19, [d]),
            a1: params.constant(0.0, [d, ra]),
            a2: params.uniform(0.1, [ra, d]),
            v0: has_value_residual.then(|| params.from_values(v0_values, [d])),
            v1: has_value_residual.then(|| params.constant(0.0, [d, rv])),
            v2: has_value_residual.then(|| params.uniform(0.1, [rv, d])),
            g1: params.constant(0.0, [d, rg]),
            g2: params.uniform(0.1, [rg, d]),
            k_k: params.constant(0.85, [d]),
            k_a: params.constant(1.0, [d]),
            r_k: params.constant(-0.04, [heads, head_size]),
            receptance: square(params, proj_bound),
            key: square(params, proj_bound),
            value: square(params, proj_bound),
            // Zero output projection: every block starts as the identity.
            output: square(params, 0.0),
            ln_x: HeadNorm {
                weight: params.constant(((layer + 1) as f32 / layers).powf(0.7), [d]),
                bias: params.constant(0.0, [d]),
                heads,
                epsilon: head_size as f64 * 1e-5,
            },
            heads,
            head_size,
        }
    }

    /// Computes every per-token quantity from the (normed) input, each token's predecessor
    /// being the token before it (`shift` before the first).
    ///
    /// # Shapes
    ///
    /// - `x`: `[batch, time, d]`; `shift`: `[batch, d]`; `v_first`: `[batch·time, d]` (absent
    ///   in the first block)
    /// - the projected quantities are `[batch·time, d]`
    pub(crate) fn project(
        &self,
        x: Tensor<3>,
        shift: Tensor<2>,
        v_first: Option<Tensor<2>>,
    ) -> Projected {
        let [batch, time, d] = x.dims();
        let m = batch * time;
        let mus = [
            &self.x_r, &self.x_w, &self.x_k, &self.x_v, &self.x_a, &self.x_g,
        ]
        .map(Param::val);
        let [x_r, x_w, x_k, x_v, x_a, x_g]: [Tensor<2>; 6] = token_shift_mix(x, shift, &mus)
            .try_into()
            .expect("one mix per mixing vector");

        let r = project(&self.receptance, x_r);
        // Each LoRA's activation (and bias, and scale) is applied as its product is written.
        let log_w = lora_tanh_then(
            x_w,
            &self.w1,
            &self.w2,
            bias_sigmoid(&self.w0, -DECAY_SCALE),
        );
        let k = project(&self.key, x_k);
        let mut v = project(&self.value, x_v.clone());
        let a = lora_then(x_a, &self.a1, &self.a2, bias_sigmoid(&self.a0, 1.0));
        let g = linear(
            linear_then(x_g, self.g1.val(), Then::Sigmoid),
            self.g2.val(),
        );

        let v_first = match (v_first, &self.v0, &self.v1, &self.v2) {
            (Some(v_first), Some(v0), Some(v1), Some(v2)) => {
                let nu = lora_then(x_v, v1, v2, bias_sigmoid(v0, 1.0));
                v = v.clone() + (v_first.clone() - v) * nu;
                v_first
            }
            _ => v.clone(),
        };

        let kappa =
            (k.clone() * self.k_k.val().unsqueeze()).reshape([m, self.heads, self.head_size]);
        let norm = kappa
            .clone()
            .powf_scalar(2.0)
            .sum_dim(2)
            .sqrt()
            .clamp_min(1e-12);
        let kappa_hat = (kappa / norm).reshape([m, d]);
        let k = k * ((a.clone() - 1.0) * self.k_a.val().unsqueeze() + 1.0);

        Projected {
            r,
            log_w,
            k,
            v,
            removal: -kappa_hat.clone(),
            removal_rate: kappa_hat * a,
            g,
            v_first,
        }
    }

    /// Group norm, bonus, gate and output projection of the recurrence's output `y`.
    ///
    /// # Shapes
    ///
    /// - `y`: `[m, d]` → `[m, d]`
    pub(crate) fn read_out(&self, y: Tensor<2>, p: &Projected) -> Tensor<2> {
        let [m, d] = y.dims();
        let (h, n) = (self.heads, self.head_size);
        let normed = self.ln_x.forward(y);
        let per_head = |t: Tensor<2>| t.reshape([m, h, n]);
        let bonus_weight =
            (per_head(p.r.clone()) * per_head(p.k.clone()) * self.r_k.val().unsqueeze()).sum_dim(2);
        let bonus = (bonus_weight * per_head(p.v.clone())).reshape([m, d]);
        project(&self.output, (normed + bonus) * p.g.clone())
    }

    /// Sequence mode: reads `x` from `state`, ignoring padding.
    ///
    /// # Shapes
    ///
    /// - `x`: `[batch, time, d]` (the LN1 output); `shift`: `[batch, d]`;
    ///   `wkv`: `[batch, heads, n, n]`; `v_first`: `[batch·time, d]`
    /// - returns the output `[batch, time, d]`, the new `shift` and `wkv`, and `v_first`.
    pub fn forward(
        &self,
        x: Tensor<3>,
        shift: Tensor<2>,
        wkv: Tensor<4>,
        v_first: Option<Tensor<2>>,
        padding: Option<&Padding>,
    ) -> (Tensor<3>, Tensor<2>, Tensor<4>, Tensor<2>) {
        let [batch, time, d] = x.dims();
        let new_shift = last_token(x.clone(), shift.clone(), padding);
        let (p, y, wkv) = self.recur(x, shift, wkv, v_first, padding);
        let out = self.read_out(y.reshape([batch * time, d]), &p);
        (out.reshape([batch, time, d]), new_shift, wkv, p.v_first)
    }

    /// Sequence mode for the state alone: [`Self::forward`]'s new `wkv` without the read-out
    /// (group norm, bonus, gate, output projection) that only the hidden states need.
    ///
    /// # Shapes
    ///
    /// As [`Self::forward`]; returns `wkv` `[batch, heads, n, n]`.
    pub fn forward_state(
        &self,
        x: Tensor<3>,
        shift: Tensor<2>,
        wkv: Tensor<4>,
        v_first: Option<Tensor<2>>,
        padding: Option<&Padding>,
    ) -> Tensor<4> {
        self.recur(x, shift, wkv, v_first, padding).2
    }

    /// Token shift, projections and the WKV-7 recurrence of sequence mode: the projections,
    /// the recurrence's output and the new state.
    ///
    /// # Shapes
    ///
    /// As [`Self::forward`]; returns `y` `[batch, time, heads, n]` and `wkv`.
    fn recur(
        &self,
        x: Tensor<3>,
        shift: Tensor<2>,
        wkv: Tensor<4>,
        v_first: Option<Tensor<2>>,
        padding: Option<&Padding>,
    ) -> (Projected, Tensor<4>, Tensor<4>) {
        let [batch, time, _] = x.dims();
        let (h, n) = (self.heads, self.head_size);
        let p = self.project(x, shift, v_first);
        let seq = |t: Tensor<2>| t.reshape([batch, time, h, n]);
        // At padding: w = 1 and no write, so the state passes through unchanged.
        let keep = |t: Tensor<2>| match padding {
            Some(padding) => seq(t) * padding.valid.clone().reshape([batch, time, 1, 1]),
            None => seq(t),
        };
        let (y, wkv) = colswarm_kernels::wkv7(
            seq(p.r.clone()),
            keep(p.log_w.clone()),
            keep(p.k.clone()),
            seq(p.v.clone()),
            seq(p.removal.clone()),
            keep(p.removal_rate.clone()),
            wkv,
        );
        (p, y, wkv)
    }

    /// Step mode: one token per sequence.
    ///
    /// # Shapes
    ///
    /// - `x`: `[batch, d]` (the LN1 output); `shift`: `[batch, d]`; `wkv`: `[batch, heads, n, n]`;
    ///   `v_first`: `[batch, d]`
    /// - returns the output `[batch, d]`, the new `shift` (= `x`) and `wkv`, and `v_first`.
    pub fn step(
        &self,
        x: Tensor<2>,
        shift: Tensor<2>,
        wkv: Tensor<4>,
        v_first: Option<Tensor<2>>,
    ) -> (Tensor<2>, Tensor<2>, Tensor<4>, Tensor<2>) {
        let [batch, d] = x.dims();
        let (h, n) = (self.heads, self.head_size);
        let p = self.project(x.clone().reshape([batch, 1, d]), shift, v_first);
        let column = |t: &Tensor<2>| t.clone().reshape([batch, h, n, 1]);
        let row = |t: &Tensor<2>| t.clone().reshape([batch, h, 1, n]);
        // S ← S·diag(w) + (S·a)·bᵀ + v·kᵀ ;  y = S·r
        let removed = wkv.clone().matmul(column(&p.removal));
        let wkv = wkv * row(&p.log_w).exp()
            + removed.matmul(row(&p.removal_rate))
            + column(&p.v).matmul(row(&p.k));
        let y = wkv.clone().matmul(column(&p.r)).reshape([batch, h * n]);
        (self.read_out(y, &p), x, wkv, p.v_first)
    }
}

/// `layer`'s map through colswarm's kernel for small products (burn's `Linear::forward` goes
/// through a general GEMM that packs both operands, slower at these sizes: BENCHMARKS.md).
pub(crate) fn project(layer: &Linear, x: Tensor<2>) -> Tensor<2> {
    let y = linear(x, layer.weight.val());
    match &layer.bias {
        Some(bias) => y + bias.val().unsqueeze(),
        None => y,
    }
}

/// `then(tanh(x · A) · B)`: the decay's LoRA, both activations applied as the products are
/// written.
fn lora_tanh_then(
    x: Tensor<2>,
    a: &Param<Tensor<2>>,
    b: &Param<Tensor<2>>,
    then: Then,
) -> Tensor<2> {
    linear_then(linear_then(x, a.val(), Then::Tanh), b.val(), then)
}

/// `σ(· + bias) · scale`.
fn bias_sigmoid(bias: &Param<Tensor<1>>, scale: f32) -> Then {
    Then::BiasSigmoid {
        bias: bias.val(),
        scale,
    }
}

/// The input at each sequence's last real token (the next token-shift memory).
pub(crate) fn last_token(
    x: Tensor<3>,
    previous: Tensor<2>,
    padding: Option<&Padding>,
) -> Tensor<2> {
    let [batch, time, d] = x.dims();
    match padding {
        Some(padding) => padding.last(x, previous),
        None if time == 0 => previous,
        None => x.narrow(1, time - 1, 1).reshape([batch, d]),
    }
}
