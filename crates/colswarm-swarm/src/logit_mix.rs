//! The logit mix: per label namespace, a learned weight for each open specialist's logits.
//!
//! For a label `l` of namespace `n`, with the primary's logit `x₀` and the logits `xᵢ` of the
//! open specialists that know `l`:
//!
//! ```text
//! mixed = (x₀ + Σᵢ aₙᵢ·xᵢ) / (1 + Σᵢ aₙᵢ),   aₙᵢ = max(θₙᵢ, 0)
//! ```
//!
//! At `θ = 0` it is exactly the primary (the swarm starts as its primary); at `θ = 1` it is the
//! plain average of the models that know the label. A label no open specialist knows keeps the
//! primary's logit. The weights are clipped at zero so the denominator never falls below one;
//! `max(θ, 0)` is written `(θ + |θ|)/2`, whose gradient at `θ = 0` is one half, so training
//! can leave the identity. Below zero that gradient is 0: a weight one step took below zero
//! would stay closed for good, so training projects `θ` back to zero after every step
//! ([`LogitMix::project`]).

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{Device, Int, Tensor};
use colswarm_rwkv::init::ParamFactory;

/// Configuration of a [`LogitMix`].
#[derive(Config, Debug, PartialEq)]
pub struct LogitMixConfig {
    /// Label namespaces (CTA and CPA together, as the caller numbers them).
    pub namespaces: usize,
    /// Specialists whose logits can be mixed in.
    pub specialists: usize,
    /// Initial `θ` of every weight: 0 gives the primary alone, 1 the plain average.
    #[config(default = 0.0)]
    pub initial_weight: f64,
}

/// Per-namespace weights of the specialists' logits (module doc).
#[derive(Module, Debug)]
pub struct LogitMix {
    /// `θ`, `[namespaces, specialists]`.
    pub weight: Param<Tensor<2>>,
}

/// One specialist's logits for a row, as the host mix reads them: its logits, the
/// `(specialist label, primary label)` pairs of the labels it shares with the primary, and its
/// weight for each primary label (the weight of the label's namespace).
pub type MixInput<'a> = (&'a [f32], &'a [(usize, usize)], &'a [f32]);

impl LogitMixConfig {
    /// Builds the mix with every `θ` at [`LogitMixConfig::initial_weight`].
    pub fn init(&self, device: &Device) -> LogitMix {
        let params = ParamFactory::new(0, device);
        LogitMix {
            weight: params.constant(
                self.initial_weight as f32,
                [self.namespaces, self.specialists],
            ),
        }
    }
}

impl LogitMix {
    /// Number of namespaces.
    pub fn namespaces(&self) -> usize {
        self.weight.shape().dims::<2>()[0]
    }

    /// Number of specialists.
    pub fn specialists(&self) -> usize {
        self.weight.shape().dims::<2>()[1]
    }

    /// The effective weights `a = max(θ, 0)`.
    ///
    /// # Shapes
    ///
    /// `[namespaces, specialists]`
    pub fn weights(&self) -> Tensor<2> {
        let theta = self.weight.val();
        (theta.clone() + theta.abs()) / 2.0
    }

    /// The mix with every negative `θ` set to 0, where its effective weight already was, and
    /// the parameter's id kept (an optimizer's state stays with it). Training calls it after each
    /// step: below zero a weight gets no gradient and could never open again, at zero it gets
    /// one half of its effective weight's.
    pub fn project(self) -> Self {
        LogitMix {
            weight: self
                .weight
                .map(|theta| theta.clamp_min(0.0).detach().require_grad()),
        }
    }

    /// The effective weights on the host, `[namespace][specialist]`.
    pub fn host_weights(&self) -> Vec<Vec<f32>> {
        let n = self.specialists().max(1);
        let values = self
            .weights()
            .into_data()
            .convert::<f32>()
            .try_to_vec::<f32>()
            .unwrap_or_default();
        values.chunks(n).map(<[f32]>::to_vec).collect()
    }

    /// Mixes the open specialists' logits into the primary's.
    ///
    /// `known` is 1 where a specialist knows the (primary) label, 0 elsewhere, and its logits
    /// there are ignored; `open` is 1 where a specialist read the row's table; `namespace`
    /// gives each label's namespace.
    ///
    /// # Shapes
    ///
    /// - `primary`: `[rows, labels]`
    /// - `specialists`: `[specialists, rows, labels]`, in the primary's label order
    /// - `known`: `[specialists, labels]`
    /// - `open`: `[rows, specialists]`
    /// - `namespace`: `[labels]`
    /// - output: `[rows, labels]`
    pub fn forward(
        &self,
        primary: Tensor<2>,
        specialists: Tensor<3>,
        known: Tensor<2>,
        open: Tensor<2>,
        namespace: Tensor<1, Int>,
    ) -> Tensor<2> {
        let [s, rows, labels] = specialists.dims();
        // Per specialist and label: its weight where it knows the label.
        let per_label = self.weights().select(0, namespace).transpose() * known.clone();
        let weight = per_label.reshape([s, 1, labels]) * open.transpose().reshape([s, rows, 1]);
        // Unknown labels' logits may be anything (even non-finite): zeroed before they are
        // weighted, so neither the sum nor its gradient ever sees them.
        let unknown = known
            .equal_elem(0.0)
            .reshape([s, 1, labels])
            .expand([s, rows, labels]);
        let contribution = specialists.mask_fill(unknown, 0.0) * weight.clone();
        let numerator = primary + contribution.sum_dim(0).reshape([rows, labels]);
        let denominator = weight.sum_dim(0).reshape([rows, labels]) + 1.0;
        numerator / denominator
    }
}

/// [`LogitMix::forward`] for one row on the host: each of `others`' logits, at its weight for
/// the label, mixed into `row`. The same arithmetic in the same order as the tensor version; at
/// weight 1 everywhere it is the plain average of the models that know each label.
pub fn mix_row(row: &mut [f32], others: &[MixInput<'_>]) {
    let mut denominator = vec![1.0f32; row.len()];
    for (logits, map, weights) in others {
        for &(s, p) in *map {
            let w = weights[p];
            if w != 0.0 {
                row[p] += w * logits[s];
                denominator[p] += w;
            }
        }
    }
    for (value, d) in row.iter_mut().zip(denominator) {
        if d != 1.0 {
            *value /= d;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::TensorData;

    fn device() -> Device {
        Device::flex()
    }

    fn tensor2(values: Vec<f32>, shape: [usize; 2]) -> Tensor<2> {
        Tensor::from_data(TensorData::new(values, shape), &device())
    }

    /// Two specialists, three labels in two namespaces (labels 0, 1 in namespace 0; label 2 in
    /// namespace 1), two rows.
    fn inputs() -> (Tensor<2>, Tensor<3>, Tensor<2>, Tensor<2>, Tensor<1, Int>) {
        let primary = tensor2(vec![1.0, 2.0, 3.0, -1.0, 0.5, 4.0], [2, 3]);
        let specialists = Tensor::from_data(
            TensorData::new(
                vec![
                    5.0,
                    7.0,
                    9.0,
                    1.0,
                    1.0,
                    1.0, // specialist 0
                    -3.0,
                    f32::NAN,
                    6.0,
                    2.0,
                    f32::NAN,
                    0.0, // specialist 1 (label 1 unknown)
                ],
                [2, 2, 3],
            ),
            &device(),
        );
        let known = tensor2(vec![1.0, 1.0, 1.0, 1.0, 0.0, 1.0], [2, 3]);
        let open = tensor2(vec![1.0, 1.0, 1.0, 0.0], [2, 2]);
        let namespace = Tensor::from_data([0i64, 0, 1].as_slice(), &device());
        (primary, specialists, known, open, namespace)
    }

    fn values(t: Tensor<2>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().unwrap()
    }

    #[test]
    fn at_initialisation_the_mix_is_exactly_the_primary() {
        let mix = LogitMixConfig::new(2, 2).init(&device());
        let (primary, specialists, known, open, namespace) = inputs();
        let expected = values(primary.clone());
        let mixed = values(mix.forward(primary, specialists, known, open, namespace));
        assert_eq!(mixed, expected);
    }

    #[test]
    fn at_weight_one_it_is_the_average_of_the_models_that_know_the_label_and_read() {
        let mix = LogitMixConfig::new(2, 2)
            .with_initial_weight(1.0)
            .init(&device());
        let (primary, specialists, known, open, namespace) = inputs();
        let mixed = values(mix.forward(primary, specialists, known, open, namespace));
        // Row 0: both read; label 1 is unknown to specialist 1. Row 1: specialist 0 alone.
        let expected = [
            (1.0 + 5.0 - 3.0) / 3.0,
            (2.0 + 7.0) / 2.0,
            (3.0 + 9.0 + 6.0) / 3.0,
            (-1.0 + 1.0) / 2.0,
            (0.5 + 1.0) / 2.0,
            (4.0 + 1.0) / 2.0,
        ];
        for (m, e) in mixed.iter().zip(expected) {
            assert!((m - e).abs() < 1e-6, "{mixed:?}");
        }
    }

    #[test]
    fn the_host_row_and_the_tensor_mix_agree_at_any_weights() {
        let mut mix = LogitMixConfig::new(2, 2).init(&device());
        let theta = vec![0.3, -0.4, 1.7, 0.6];
        mix.weight = mix.weight.map(|_| tensor2(theta.clone(), [2, 2]));
        let (primary, specialists, known, open, namespace) = inputs();
        let mixed = values(mix.forward(primary, specialists, known, open, namespace));
        let a = mix.host_weights();
        assert_eq!(a, vec![vec![0.3, 0.0], vec![1.7, 0.6]]);
        // Per primary label, each specialist's weight: its namespace's.
        let label_weights = |s: usize| vec![a[0][s], a[0][s], a[1][s]];
        let (w0, w1) = (label_weights(0), label_weights(1));
        let all = [(0, 0), (1, 1), (2, 2)];
        let mut row0 = vec![1.0, 2.0, 3.0];
        mix_row(
            &mut row0,
            &[
                (&[5.0, 7.0, 9.0], &all, &w0),
                (&[-3.0, 0.0, 6.0], &[(0, 0), (2, 2)], &w1),
            ],
        );
        let mut row1 = vec![-1.0, 0.5, 4.0];
        mix_row(&mut row1, &[(&[1.0, 1.0, 1.0], &all, &w0)]);
        let host: Vec<f32> = row0.into_iter().chain(row1).collect();
        for (m, h) in mixed.iter().zip(&host) {
            assert!((m - h).abs() < 1e-6, "{mixed:?} against {host:?}");
        }
    }

    #[test]
    fn training_can_leave_the_identity() {
        let device = Device::flex().autodiff();
        let mix = LogitMixConfig::new(2, 2).init(&device);
        let (primary, specialists, known, open, namespace) = inputs();
        let to = |t: Tensor<2>| Tensor::<2>::from_data(t.into_data(), &device);
        let specialists = Tensor::<3>::from_data(specialists.into_data(), &device);
        let namespace = Tensor::<1, Int>::from_data(namespace.into_data(), &device);
        let mixed = mix.forward(to(primary), specialists, to(known), to(open), namespace);
        // Pull every mixed logit of label 2 up: specialist 0 reads higher there, so its weight
        // in namespace 1 must get a gradient that raises it.
        let loss = mixed.slice([0..2, 2..3]).sum().neg();
        let grads = loss.backward();
        let grad = mix.weight.grad(&grads).unwrap();
        let grad = grad.into_data().try_to_vec::<f32>().unwrap();
        assert!(grad[2] < 0.0, "{grad:?}");
        assert!(grad.iter().all(|g| g.is_finite()), "{grad:?}");
    }

    #[test]
    fn a_weight_pushed_below_zero_opens_again_once_projected() {
        use burn::optim::{AdamConfig, GradientsParams};
        let device = Device::flex().autodiff();
        // One step that closes the weight, then steps that want it open.
        let train = |project: bool| -> f32 {
            let mut mix = LogitMixConfig::new(1, 1).init(&device);
            let id = mix.weight.id;
            let mut optim = AdamConfig::new().init();
            for sign in [1.0, -1.0, -1.0, -1.0] {
                let loss = mix.weights().sum() * sign;
                let grads = GradientsParams::from_grads(loss.backward(), &mix);
                mix = optim.step(0.1, mix, grads);
                if project {
                    mix = mix.project();
                    assert_eq!(mix.weight.id, id, "the parameter keeps its id");
                }
            }
            mix.host_weights()[0][0]
        };
        assert_eq!(
            train(false),
            0.0,
            "without the projection the weight stays closed"
        );
        assert!(train(true) > 0.1, "projected, it opens: {}", train(true));
    }
}
