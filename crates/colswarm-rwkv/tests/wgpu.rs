//! The model on a CubeCL device (feature `wgpu`; without a GPU, Mesa's lavapipe) against the
//! same model on Flex: there, the WKV-7 recurrence and its backward run as CubeCL kernels.
#![cfg(feature = "wgpu")]

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{Device, DeviceKind, Int, Tensor, TensorData};
use colswarm_rwkv::{Rwkv, RwkvConfig};
use colswarm_testing::perturb;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const BATCH: usize = 2;
const TIME: usize = 40;
const D: usize = 32;

/// A scalar that depends on every hidden state and on the final WKV states.
fn loss(model: &Rwkv, device: &Device) -> Tensor<1> {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let tokens: Vec<i64> = (0..BATCH * TIME).map(|_| rng.random_range(0..64)).collect();
    let tokens = Tensor::<2, Int>::from_data(TensorData::new(tokens, [BATCH, TIME]), device);
    let weights: Vec<f32> = (0..BATCH * TIME * D)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let weights = Tensor::<3>::from_data(TensorData::new(weights, [BATCH, TIME, D]), device);
    let out = model.forward(tokens, Some(&[TIME, 23]), None);
    let state_term = out
        .state
        .layers
        .iter()
        .map(|l| l.wkv.clone().sum())
        .reduce(|a, b| a + b)
        .expect("the model has layers");
    (out.hidden * weights).sum() + state_term
}

/// Every parameter's gradient, flattened in visiting order.
fn gradients(model: &Rwkv, device: &Device) -> (f32, Vec<f32>) {
    struct Collect<'a> {
        grads: &'a burn::tensor::Gradients,
        values: Vec<f32>,
    }
    impl ModuleVisitor for Collect<'_> {
        fn visit_float<const N: usize>(&mut self, param: &Param<Tensor<N>>) {
            let grad = param
                .val()
                .grad(self.grads)
                .expect("every parameter is used");
            self.values
                .extend(grad.into_data().try_to_vec::<f32>().expect("f32"));
        }
    }
    let loss = loss(model, device);
    let value = loss.clone().into_scalar::<f32>();
    let grads = loss.backward();
    let mut collect = Collect {
        grads: &grads,
        values: Vec::new(),
    };
    model.visit(&mut collect);
    (value, collect.values)
}

#[test]
fn model_on_wgpu_matches_flex_forward_and_backward() {
    let flex = Device::flex().autodiff();
    let wgpu = Device::wgpu(DeviceKind::DefaultDevice).autodiff();
    let config = RwkvConfig::new(64, D, 2)
        .with_head_size(16)
        .with_d_ffn(Some(64))
        .with_decay_rank(Some(8))
        .with_icl_rank(Some(8))
        .with_value_rank(Some(8))
        .with_gate_rank(Some(8));
    // `init` draws the weights on the host from the seed: the same model on both devices.
    let model = |device: &Device| perturb(config.init(3, device), 4, 0.3);

    let (loss_flex, grads_flex) = gradients(&model(&flex), &flex);
    let (loss_wgpu, grads_wgpu) = gradients(&model(&wgpu), &wgpu);

    assert!(loss_flex.is_finite());
    let loss_err = (loss_wgpu - loss_flex).abs() / loss_flex.abs().max(1.0);
    assert!(
        loss_err < 1e-4,
        "loss: wgpu {loss_wgpu} vs flex {loss_flex}"
    );
    assert_eq!(grads_wgpu.len(), grads_flex.len());
    let scale = grads_flex.iter().fold(1e-6f32, |m, g| m.max(g.abs()));
    let diff = grads_wgpu
        .iter()
        .zip(&grads_flex)
        .fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(
        grads_wgpu.iter().all(|g| g.is_finite()) && diff / scale < 1e-3,
        "parameter gradients differ: max error {diff} at scale {scale}"
    );
}
