//! WKV-7 as a burn backend extension: the trait, the fused Flex implementation, and the
//! autodiff implementation with a hand-written backward.
//!
//! # Two outputs, one graph node
//!
//! A burn autodiff node has one output tensor, and WKV-7 has two (`y` and the final state).
//! The autodiff implementation therefore records one node whose output is both, packed flat
//! (`y` first, then the state), and returns two slices of it. The slices' backward scatters
//! each output's gradient into a packed gradient, which the node's backward splits again.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::ops::FloatTensorOps;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Flex, TensorMetadata, backend_extension};
use burn::tensor::{DType, Shape, Slice, TensorData};

use super::cpu::{self, Dims, Inputs};

/// The WKV-7 recurrence as a backend operation (the extension behind [`wkv7`](super::wkv7)).
///
/// The default body is the reference in primitive ops ([`wkv7_reference`](super::wkv7_reference));
/// [`Flex`] overrides it with the fused CPU kernel, burn's CubeCL backend (features `wgpu`,
/// `cuda`) with the CubeCL kernel, and `Autodiff<B, C>` with a custom backward for any `B` that
/// implements [`Wkv7TrainBackend`].
#[backend_extension(Flex, Autodiff, Cube: cfg(feature = "cube"))]
pub trait Wkv7Backend: Backend {
    /// Runs the recurrence; `parallel` lets an implementation use several threads.
    ///
    /// # Shapes
    ///
    /// As [`wkv7`](super::wkv7): inputs `[batch, time, heads, n]`, `state` `[batch, heads, n, n]`;
    /// returns `(y, final_state)`.
    fn wkv7(
        r: FloatTensor<Self>,
        log_w: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        state: FloatTensor<Self>,
        parallel: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let _ = parallel;
        super::reference::wkv7_ops::<Self>(r, log_w, k, v, a, b, state)
    }
}

/// The kernels the autodiff implementation of [`Wkv7Backend`] runs on the inner backend.
pub trait Wkv7TrainBackend: Wkv7Backend {
    /// Forward for training: returns `y` and the final state packed flat into one tensor
    /// (`[batch·time·heads·n + batch·heads·n·n]`), and, if `checkpoint`, what this backend's
    /// [`Self::wkv7_backward`] needs besides the inputs: at least the state at the start of
    /// every chunk of 16 steps, in a layout of the backend's own (otherwise a placeholder that
    /// callers ignore). Flex: `[batch, heads, ⌈time/16⌉, n, n]`; CubeCL: the same states
    /// transposed, then every step's `u = S·a`, flat.
    fn wkv7_forward_train(
        r: FloatTensor<Self>,
        log_w: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        state: FloatTensor<Self>,
        checkpoint: bool,
        parallel: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>);

    /// Gradients `[r, log_w, k, v, a, b, state]` from the saved inputs and checkpoints and the
    /// packed gradient of the packed output of [`Self::wkv7_forward_train`].
    fn wkv7_backward(
        r: FloatTensor<Self>,
        log_w: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        checkpoints: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        parallel: bool,
    ) -> [FloatTensor<Self>; 7];
}

/// Contiguous `f32` copy-or-view of a Flex tensor.
fn contiguous(x: FlexTensor) -> FlexTensor {
    assert_eq!(x.dtype(), DType::F32, "fused wkv7 needs f32 tensors");
    x.to_contiguous()
}

fn f32s(x: &FlexTensor) -> &[f32] {
    x.as_slice::<f32>()
        .expect("fused wkv7: tensor made contiguous f32 above")
}

fn flex(values: Vec<f32>, shape: impl Into<Shape>) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(values, shape.into()))
}

/// The six sequence inputs of a Flex call, held contiguous.
struct FlexInputs([FlexTensor; 6]);

impl FlexInputs {
    fn new(
        r: FlexTensor,
        log_w: FlexTensor,
        k: FlexTensor,
        v: FlexTensor,
        a: FlexTensor,
        b: FlexTensor,
    ) -> Self {
        Self([r, log_w, k, v, a, b].map(contiguous))
    }

    fn dims(&self) -> Dims {
        Dims::of(&self.0[0].shape())
    }

    fn slices(&self) -> Inputs<'_> {
        let [r, log_w, k, v, a, b] = &self.0;
        Inputs {
            r: f32s(r),
            log_w: f32s(log_w),
            k: f32s(k),
            v: f32s(v),
            a: f32s(a),
            b: f32s(b),
        }
    }
}

impl Wkv7Backend for Flex {
    fn wkv7(
        r: FlexTensor,
        log_w: FlexTensor,
        k: FlexTensor,
        v: FlexTensor,
        a: FlexTensor,
        b: FlexTensor,
        state: FlexTensor,
        parallel: bool,
    ) -> (FlexTensor, FlexTensor) {
        let x = FlexInputs::new(r, log_w, k, v, a, b);
        let d = x.dims();
        let state = contiguous(state);
        let out = cpu::forward(d, x.slices(), f32s(&state), false, parallel);
        (
            flex(out.y, [d.batch, d.time, d.heads, d.n]),
            flex(out.state, [d.batch, d.heads, d.n, d.n]),
        )
    }
}

impl Wkv7TrainBackend for Flex {
    fn wkv7_forward_train(
        r: FlexTensor,
        log_w: FlexTensor,
        k: FlexTensor,
        v: FlexTensor,
        a: FlexTensor,
        b: FlexTensor,
        state: FlexTensor,
        checkpoint: bool,
        parallel: bool,
    ) -> (FlexTensor, FlexTensor) {
        let x = FlexInputs::new(r, log_w, k, v, a, b);
        let d = x.dims();
        let state = contiguous(state);
        let out = cpu::forward(d, x.slices(), f32s(&state), checkpoint, parallel);
        let mut packed = out.y;
        packed.extend_from_slice(&out.state);
        let chunks = if checkpoint { d.chunks() } else { 0 };
        (
            flex(packed, [d.seq_len() + d.state_len()]),
            flex(out.checkpoints, [d.batch, d.heads, chunks, d.n, d.n]),
        )
    }

    fn wkv7_backward(
        r: FlexTensor,
        log_w: FlexTensor,
        k: FlexTensor,
        v: FlexTensor,
        a: FlexTensor,
        b: FlexTensor,
        checkpoints: FlexTensor,
        grad: FlexTensor,
        parallel: bool,
    ) -> [FlexTensor; 7] {
        let x = FlexInputs::new(r, log_w, k, v, a, b);
        let d = x.dims();
        let (checkpoints, grad) = (contiguous(checkpoints), contiguous(grad));
        let (dy, d_state) = f32s(&grad).split_at(d.seq_len());
        let g = cpu::backward(d, x.slices(), f32s(&checkpoints), dy, d_state, parallel);
        let seq = [d.batch, d.time, d.heads, d.n];
        [
            flex(g.r, seq),
            flex(g.log_w, seq),
            flex(g.k, seq),
            flex(g.v, seq),
            flex(g.a, seq),
            flex(g.b, seq),
            flex(g.state, [d.batch, d.heads, d.n, d.n]),
        ]
    }
}

/// The autodiff node of one WKV-7 call.
#[derive(Debug)]
struct Wkv7Node;

/// What the backward needs: the six sequence inputs and the checkpoints (the initial state is
/// the first checkpoint), and whether to run in parallel.
type Saved<B> = ([FloatTensor<B>; 7], bool);

impl<B: Wkv7TrainBackend> Backward<B, 7> for Wkv7Node {
    type State = Saved<B>;

    fn backward(self, ops: Ops<Saved<B>, 7>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<B>(&ops.node);
        let ([r, log_w, k, v, a, b, checkpoints], parallel) = ops.state;
        let input_grads = B::wkv7_backward(r, log_w, k, v, a, b, checkpoints, grad, parallel);
        for (parent, g) in ops.parents.into_iter().zip(input_grads) {
            if let Some(node) = parent {
                grads.register::<B>(node.id, g);
            }
        }
    }
}

impl<B: Wkv7TrainBackend, C: CheckpointStrategy> Wkv7Backend for Autodiff<B, C> {
    fn wkv7(
        r: FloatTensor<Self>,
        log_w: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        state: FloatTensor<Self>,
        parallel: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let [batch, time, heads, n] = super::dims4(&r.shape());
        let (r, r_node) = r.into_parts();
        let (log_w, log_w_node) = log_w.into_parts();
        let (k, k_node) = k.into_parts();
        let (v, v_node) = v.into_parts();
        let (a, a_node) = a.into_parts();
        let (b, b_node) = b.into_parts();
        let (state, state_node) = state.into_parts();
        let nodes = [
            r_node, log_w_node, k_node, v_node, a_node, b_node, state_node,
        ];

        let packed = match Wkv7Node.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (packed, checkpoints) = B::wkv7_forward_train(
                    r.clone(),
                    log_w.clone(),
                    k.clone(),
                    v.clone(),
                    a.clone(),
                    b.clone(),
                    state,
                    true,
                    parallel,
                );
                prep.finish(([r, log_w, k, v, a, b, checkpoints], parallel), packed)
            }
            OpsKind::UnTracked(prep) => {
                let (packed, _) =
                    B::wkv7_forward_train(r, log_w, k, v, a, b, state, false, parallel);
                prep.finish(packed)
            }
        };

        let y_len = batch * time * heads * n;
        let state_len = batch * heads * n * n;
        let y = Self::float_slice(packed.clone(), &[Slice::from(0..y_len)]);
        let state = Self::float_slice(packed, &[Slice::from(y_len..y_len + state_len)]);
        (
            Self::float_reshape(y, Shape::new([batch, time, heads, n])),
            Self::float_reshape(state, Shape::new([batch, heads, n, n])),
        )
    }
}
