//! Parity of the fused WKV-7 (forward, final state, and the gradients of all seven inputs)
//! with the reference, on fresh seeded random inputs shaped like RWKV-7's.
//!
//! Every fused output buffer is NaN-filled in debug builds before the kernel writes it, so an
//! element the kernel misses fails [`rel_err`]'s finiteness check.

use burn::tensor::{Device, Tensor};
use rand_chacha::ChaCha8Rng;

use super::{WKV7_CHECKPOINT_INTERVAL, wkv7, wkv7_with};
use crate::implementation::KernelImpl;
use crate::testing::{rel_err, rng, tensor, uniform};

const TOL: f32 = 1e-4;
/// `−e^{−0.5}`: the most negative log-decay RWKV-7 produces (w = 0.545).
const LOG_W_MIN: f32 = -0.606_530_66;

/// Host-side inputs of one call, so the same values can be built on several devices.
#[derive(Clone, Debug)]
struct Case {
    shape: [usize; 4],
    r: Vec<f32>,
    log_w: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
    state: Vec<f32>,
    /// Cotangents of `y` and of the final state in the test loss.
    c_y: Vec<f32>,
    c_state: Vec<f32>,
}

impl Case {
    /// RWKV-7-like inputs: `a = −κ̂`, `b = κ̂ ⊙ rate` with `κ̂` unit-norm per head and
    /// `rate ∈ (0, 1)`, `log_w ∈ (log_w_lo, log_w_hi)`.
    fn random(rng: &mut ChaCha8Rng, shape: [usize; 4], log_w_lo: f32, log_w_hi: f32) -> Self {
        let [batch, time, heads, n] = shape;
        let len = batch * time * heads * n;
        let state_len = batch * heads * n * n;
        let mut kappa = uniform(rng, len, -1.0, 1.0);
        for head in kappa.chunks_exact_mut(n.max(1)) {
            let norm = head.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            head.iter_mut().for_each(|x| *x /= norm);
        }
        let rate = uniform(rng, len, 0.0, 1.0);
        Self {
            shape,
            r: uniform(rng, len, -1.0, 1.0),
            log_w: uniform(rng, len, log_w_lo, log_w_hi),
            k: uniform(rng, len, -1.0, 1.0),
            v: uniform(rng, len, -1.0, 1.0),
            a: kappa.iter().map(|x| -x).collect(),
            b: kappa.iter().zip(&rate).map(|(x, q)| x * q).collect(),
            state: uniform(rng, state_len, -1.0, 1.0),
            c_y: uniform(rng, len, -1.0, 1.0),
            c_state: uniform(rng, state_len, -1.0, 1.0),
        }
    }

    fn realistic(seed: u64, shape: [usize; 4]) -> Self {
        Self::random(&mut rng(seed), shape, LOG_W_MIN, 0.0)
    }

    fn state_shape(&self) -> [usize; 4] {
        let [batch, _, heads, n] = self.shape;
        [batch, heads, n, n]
    }

    /// The seven inputs on `device`, marked as requiring gradients when `grad`.
    fn inputs(&self, device: &Device, grad: bool) -> [Tensor<4>; 7] {
        let seq = |x: &Vec<f32>| tensor(x.clone(), self.shape, device);
        [
            seq(&self.r),
            seq(&self.log_w),
            seq(&self.k),
            seq(&self.v),
            seq(&self.a),
            seq(&self.b),
            tensor(self.state.clone(), self.state_shape(), device),
        ]
        .map(|x| if grad { x.require_grad() } else { x })
    }

    fn run(&self, imp: KernelImpl, inputs: [Tensor<4>; 7]) -> (Tensor<4>, Tensor<4>) {
        let [r, log_w, k, v, a, b, state] = inputs;
        wkv7_with(imp, r, log_w, k, v, a, b, state)
    }

    /// `(y, final_state)` on plain Flex.
    fn forward(&self, imp: KernelImpl) -> (Tensor<4>, Tensor<4>) {
        self.forward_on(&Device::flex(), imp)
    }

    /// `(y, final_state)` on `device`.
    fn forward_on(&self, device: &Device, imp: KernelImpl) -> (Tensor<4>, Tensor<4>) {
        self.run(imp, self.inputs(device, false))
    }

    /// Gradients of `Σ y ⊙ C_y + Σ S_T ⊙ C_S` w.r.t. the seven inputs, on Flex + autodiff.
    fn gradients(&self, imp: KernelImpl) -> [Tensor<4>; 7] {
        self.gradients_on(&Device::flex(), imp)
    }

    /// As [`Case::gradients`], on `device` + autodiff.
    fn gradients_on(&self, device: &Device, imp: KernelImpl) -> [Tensor<4>; 7] {
        let device = device.clone().autodiff();
        let inputs = self.inputs(&device, true);
        let (y, state) = self.run(imp, inputs.clone());
        let loss = (y * tensor(self.c_y.clone(), self.shape, &device)).sum()
            + (state * tensor(self.c_state.clone(), self.state_shape(), &device)).sum();
        let grads = loss.backward();
        inputs.map(|x| x.grad(&grads).expect("every input requires a gradient"))
    }
}

const NAMES: [&str; 7] = ["r", "log_w", "k", "v", "a", "b", "state"];

fn assert_forward_parity(case: &Case, imp: KernelImpl) {
    let (y_ref, s_ref) = case.forward(KernelImpl::Reference);
    let (y, s) = case.forward(imp);
    let (ey, es) = (rel_err(y, y_ref), rel_err(s, s_ref));
    assert!(
        ey <= TOL && es <= TOL,
        "{imp:?} {:?}: y error {ey:e}, state error {es:e}",
        case.shape
    );
}

fn assert_gradient_parity(case: &Case, imp: KernelImpl) {
    let reference = case.gradients(KernelImpl::Reference);
    let fused = case.gradients(imp);
    for ((name, g), g_ref) in NAMES.iter().zip(fused).zip(reference) {
        let e = rel_err(g, g_ref);
        assert!(e <= TOL, "{imp:?} {:?}: d{name} error {e:e}", case.shape);
    }
}

/// Shapes covering B = 1, T = 1, T below/at/above/not a multiple of the checkpoint interval,
/// several head counts, and the head sizes with and without a specialised kernel.
const SHAPES: [[usize; 4]; 8] = [
    [1, 1, 1, 8],
    [1, 17, 1, 16],
    [2, 16, 3, 8],
    [2, 33, 2, 16],
    [1, 33, 2, 64],
    [3, 5, 4, 32],
    [1, 20, 1, 12],
    [2, 9, 1, 128],
];

#[test]
fn checkpoint_interval_is_sixteen() {
    assert_eq!(WKV7_CHECKPOINT_INTERVAL, 16);
}

#[test]
fn fused_forward_matches_reference() {
    for (seed, shape) in SHAPES.into_iter().enumerate() {
        let case = Case::realistic(seed as u64, shape);
        assert_forward_parity(&case, KernelImpl::Fused);
        assert_forward_parity(&case, KernelImpl::FusedSerial);
    }
}

#[test]
fn fused_gradients_match_reference() {
    for (seed, shape) in SHAPES.into_iter().enumerate() {
        let case = Case::realistic(100 + seed as u64, shape);
        assert_gradient_parity(&case, KernelImpl::Fused);
    }
    assert_gradient_parity(
        &Case::realistic(200, [2, 17, 2, 16]),
        KernelImpl::FusedSerial,
    );
}

/// Several chunks with N = 64 (the model's head size) and a partial last chunk.
#[test]
fn fused_gradients_match_reference_over_many_chunks() {
    let case = Case::realistic(300, [1, 70, 2, 64]);
    assert_gradient_parity(&case, KernelImpl::Fused);
}

/// Decay at its bounds: `w → 0.545` (`log_w = −e^{−0.5}`) and `w → 1` (`log_w → 0`).
#[test]
fn decay_at_its_bounds_stays_finite_and_matches() {
    for (seed, (lo, hi)) in [(LOG_W_MIN, LOG_W_MIN + 1e-6), (-1e-6, 0.0)]
        .into_iter()
        .enumerate()
    {
        let case = Case::random(&mut rng(400 + seed as u64), [2, 48, 2, 64], lo, hi);
        assert_forward_parity(&case, KernelImpl::Fused);
        assert_gradient_parity(&case, KernelImpl::Fused);
    }
}

/// On an autodiff device with no input requiring a gradient, the op records nothing and
/// still computes the same values.
#[test]
fn untracked_inputs_on_an_autodiff_device() {
    let case = Case::realistic(500, [2, 19, 2, 16]);
    let (y_ref, s_ref) = case.forward(KernelImpl::Reference);
    let (y, s) = case.run(
        KernelImpl::Fused,
        case.inputs(&Device::flex().autodiff(), false),
    );
    assert!(rel_err(y, y_ref) <= TOL && rel_err(s, s_ref) <= TOL);
}

/// Only some inputs tracked: those get the reference's gradients, the rest none.
#[test]
fn partially_tracked_inputs() {
    let case = Case::realistic(600, [1, 21, 2, 16]);
    let device = Device::flex().autodiff();
    let grads_of = |imp| {
        let [r, log_w, k, v, a, b, state] = case.inputs(&device, false);
        let (r, state) = (r.require_grad(), state.require_grad());
        let (y, _) = wkv7_with(imp, r.clone(), log_w, k.clone(), v, a, b, state.clone());
        let grads = (y * tensor(case.c_y.clone(), case.shape, &device))
            .sum()
            .backward();
        assert!(k.grad(&grads).is_none());
        [r.grad(&grads), state.grad(&grads)].map(|g| g.expect("tracked"))
    };
    let [dr, ds] = grads_of(KernelImpl::Fused);
    let [dr_ref, ds_ref] = grads_of(KernelImpl::Reference);
    assert!(rel_err(dr, dr_ref) <= TOL && rel_err(ds, ds_ref) <= TOL);
}

/// Inputs that are strided views (here, transposed) are read correctly.
#[test]
fn strided_inputs() {
    let case = Case::realistic(700, [2, 18, 3, 16]);
    let device = Device::flex();
    let [r, log_w, k, v, a, b, state] = case.inputs(&device, false);
    // A tensor stored with dims `d0` and `d1` exchanged, viewed back in the logical order.
    let transposed = |x: Tensor<4>, d0, d1| {
        Tensor::<4>::from_data(x.swap_dims(d0, d1).into_data(), &device).swap_dims(d0, d1)
    };
    let strided = |x| transposed(x, 1, 2);
    let (y, s) = wkv7_with(
        KernelImpl::Fused,
        strided(r),
        strided(log_w),
        strided(k),
        strided(v),
        strided(a),
        strided(b),
        transposed(state, 2, 3),
    );
    let (y_ref, s_ref) = case.forward(KernelImpl::Reference);
    assert!(rel_err(y, y_ref) <= TOL && rel_err(s, s_ref) <= TOL);
}

/// An empty sequence: no output, the state passes through, and its gradient is the
/// final state's.
#[test]
fn empty_sequence() {
    let case = Case::realistic(800, [2, 0, 3, 8]);
    let (y, s) = case.forward(KernelImpl::Fused);
    assert_eq!(y.dims(), [2, 0, 3, 8]);
    let state = tensor(case.state.clone(), case.state_shape(), &Device::flex());
    assert_eq!(rel_err(s, state), 0.0);
    let d_state = case.gradients(KernelImpl::Fused)[6].clone();
    let c_state = tensor(case.c_state.clone(), case.state_shape(), &Device::flex());
    assert_eq!(rel_err(d_state, c_state), 0.0);
}

/// `wkv7` itself takes the fused path on Flex and agrees with the reference.
#[test]
fn default_entry_point_matches_reference() {
    let case = Case::realistic(900, [2, 24, 2, 32]);
    let [r, log_w, k, v, a, b, state] = case.inputs(&Device::flex(), false);
    let (y, s) = wkv7(r, log_w, k, v, a, b, state);
    let (y_ref, s_ref) = case.forward(KernelImpl::Reference);
    assert!(rel_err(y, y_ref) <= TOL && rel_err(s, s_ref) <= TOL);
}

#[test]
#[should_panic(expected = "`state` must be [batch, heads, head_size, head_size]")]
fn mismatched_state_panics() {
    let case = Case::realistic(1000, [1, 4, 2, 8]);
    let [r, log_w, k, v, a, b, _] = case.inputs(&Device::flex(), false);
    let state = Tensor::<4>::zeros([1, 2, 8, 4], &Device::flex());
    let _ = wkv7(r, log_w, k, v, a, b, state);
}

#[test]
#[should_panic(expected = "`k` must have the shape of `r`")]
fn mismatched_sequence_panics() {
    let case = Case::realistic(1001, [1, 4, 2, 8]);
    let [r, log_w, _, v, a, b, state] = case.inputs(&Device::flex(), false);
    let k = Tensor::<4>::zeros([1, 5, 2, 8], &Device::flex());
    let _ = wkv7_with(KernelImpl::Fused, r, log_w, k, v, a, b, state);
}

/// The CubeCL kernel (features `wgpu` / `cuda`) against the reference run on Flex, on the
/// same inputs. In CI this runs on Mesa's lavapipe (software Vulkan).
#[cfg(feature = "cube")]
mod cube {
    use super::*;
    use crate::testing::cube_device;

    fn assert_cube_parity(case: &Case, gradients: bool) {
        let device = cube_device();
        let (y_ref, s_ref) = case.forward(KernelImpl::Reference);
        let (y, s) = case.forward_on(&device, KernelImpl::Fused);
        let (ey, es) = (rel_err(y, y_ref), rel_err(s, s_ref));
        assert!(
            ey <= TOL && es <= TOL,
            "cube {:?}: y error {ey:e}, state error {es:e}",
            case.shape
        );
        if gradients {
            let reference = case.gradients(KernelImpl::Reference);
            let fused = case.gradients_on(&device, KernelImpl::Fused);
            for ((name, g), g_ref) in NAMES.iter().zip(fused).zip(reference) {
                let e = rel_err(g, g_ref);
                assert!(e <= TOL, "cube {:?}: d{name} error {e:e}", case.shape);
            }
        }
    }

    #[test]
    fn fused_is_the_default_on_a_cube_device() {
        let device = cube_device();
        assert_eq!(
            KernelImpl::fastest(&device, burn::tensor::DType::F32),
            KernelImpl::Fused
        );
        assert!(!KernelImpl::FusedSerial.is_available(&device, burn::tensor::DType::F32));
    }

    #[test]
    fn cube_forward_and_gradients_match_reference() {
        for (seed, shape) in SHAPES.into_iter().enumerate() {
            assert_cube_parity(&Case::realistic(1100 + seed as u64, shape), true);
        }
    }

    /// A sequence whose 16-step checkpoints would not fit in one of the device's buffers
    /// checkpoints every 32 or 64 steps (the limit lowered here, so small inputs take that path),
    /// with the same results.
    #[test]
    fn cube_longer_checkpoint_intervals() {
        use crate::wkv7::cube::TEST_MAX_SAVED_BYTES;
        use std::sync::atomic::Ordering;
        let shape = [1, 70, 2, 64];
        // Saved bytes: 199,680 at 16 steps, 134,144 at 32, 101,376 at 64.
        for (seed, max, interval) in [(1700, 140_000, 32), (1701, 110_000, 64)] {
            let dims = crate::wkv7::cpu::Dims::of(&burn::tensor::Shape::new(shape));
            assert_eq!(
                crate::wkv7::cube::checkpoint_interval(&dims, max, 4),
                interval
            );
            TEST_MAX_SAVED_BYTES.store(max, Ordering::Relaxed);
            assert_cube_parity(&Case::realistic(seed, shape), true);
        }
        TEST_MAX_SAVED_BYTES.store(u64::MAX, Ordering::Relaxed);
    }

    /// Many chunks at the model's head size, with a partial last chunk.
    #[test]
    fn cube_gradients_over_many_chunks() {
        assert_cube_parity(&Case::realistic(1200, [2, 70, 2, 64]), true);
    }

    /// A sequence long enough that an un-unrolled inner loop would pass lavapipe's cap on
    /// shader loop iterations (~65 k).
    #[test]
    fn cube_long_sequence() {
        assert_cube_parity(&Case::realistic(1300, [1, 1100, 1, 64]), false);
        assert_cube_parity(&Case::realistic(1301, [1, 300, 1, 64]), true);
    }

    #[test]
    fn cube_decay_at_its_bounds() {
        for (seed, (lo, hi)) in [(LOG_W_MIN, LOG_W_MIN + 1e-6), (-1e-6, 0.0)]
            .into_iter()
            .enumerate()
        {
            let case = Case::random(&mut rng(1400 + seed as u64), [2, 48, 2, 64], lo, hi);
            assert_cube_parity(&case, true);
        }
    }

    /// Strided views are made contiguous before the launch; the wrapper `wkv7` picks the
    /// kernel by itself.
    #[test]
    fn cube_strided_inputs_through_the_default_entry_point() {
        let case = Case::realistic(1500, [2, 18, 3, 16]);
        let device = cube_device();
        let [r, log_w, k, v, a, b, state] = case.inputs(&device, false);
        let strided = |x: Tensor<4>| {
            Tensor::<4>::from_data(x.swap_dims(1, 2).into_data(), &device).swap_dims(1, 2)
        };
        let (y, s) = wkv7(
            strided(r),
            strided(log_w),
            strided(k),
            strided(v),
            strided(a),
            strided(b),
            state,
        );
        let (y_ref, s_ref) = case.forward(KernelImpl::Reference);
        assert!(rel_err(y, y_ref) <= TOL && rel_err(s, s_ref) <= TOL);
    }

    /// An autodiff device with nothing tracked runs the untracked forward.
    #[test]
    fn cube_untracked_on_an_autodiff_device() {
        let case = Case::realistic(1600, [2, 19, 2, 16]);
        let (y_ref, s_ref) = case.forward(KernelImpl::Reference);
        let (y, s) = case.run(
            KernelImpl::Fused,
            case.inputs(&cube_device().autodiff(), false),
        );
        assert!(rel_err(y, y_ref) <= TOL && rel_err(s, s_ref) <= TOL);
    }
}
