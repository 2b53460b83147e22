//! Fused WKV-7 forward and backward in plain Rust, over contiguous `f32` slices.
//!
//! One task per `(batch, head)` chain, run in parallel; the time loop is inside the task, so
//! the chain's `N × N` state (16 KiB at `N = 64`) stays in L1 for the whole sequence. Per
//! step, each state row `i` (value index) is read once: the `a`-dot, the in-place update and
//! the `r`-dot, vectorised over the key index `j` (the row-local form of docs/RWKV7.md §4),
//! four rows at a time so that their reductions overlap. Vector code is explicit ([`Simd`]),
//! for AVX-512 or AVX2 chosen at run time.
//!
//! # Backward: checkpoint and recompute
//!
//! The forward used for training stores the state at the start of every chunk of
//! [`CHECKPOINT_INTERVAL`] steps. The backward walks the chunks from last to first: it
//! recomputes the chunk's states and `u = S·a` from the chunk's checkpoint, then runs the
//! reverse recurrence (docs/RWKV7.md §8) through the chunk, carrying `dS`. Recomputation is
//! exact (the same floating-point operations in the same order as the forward), whereas walking
//! the state backwards by inverting the diagonal-plus-rank-one transition `diag(w) + a·bᵀ`
//! amplifies rounding error (by up to about 10⁴ within a chunk: docs/RWKV7.md §9). Recompute
//! costs one extra forward pass, `⌈T/16⌉·N²` floats of checkpoints per chain, and
//! `(16 + 1)·N²` floats of scratch per task.
//!
//! Per step `t`, with `S = S_t`, `P = S_{t-1}` and `dS` the gradient w.r.t. `S_t` (starting
//! from the final state's gradient), row `i` does:
//!
//! ```text
//! dS_i += dy_i · r            dr += dy_i · S_i
//! du_i  = dS_i · b            dv_i = dS_i · k
//! dw   += dS_i ⊙ P_i          db  += u_i · dS_i      dk += v_i · dS_i      da += du_i · P_i
//! dS_i  = dS_i ⊙ w + du_i · a                       (now the gradient w.r.t. S_{t-1})
//! ```
//!
//! and then `d log_w = dw ⊙ w`. After the first step, `dS` is the initial state's gradient.

use crate::cpu::{Isa, exp_into, isa_dispatch, map_tasks, output_buffer};
use crate::simd::{Scalar, Simd};

/// Steps between two stored states in the training forward.
pub(crate) const CHECKPOINT_INTERVAL: usize = 16;

/// Sizes of one WKV-7 call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dims {
    pub batch: usize,
    pub time: usize,
    pub heads: usize,
    pub n: usize,
}

impl Dims {
    /// The sizes of a `[batch, time, heads, n]` sequence tensor's shape.
    pub fn of(shape: &burn::tensor::Shape) -> Self {
        let [batch, time, heads, n] = super::dims4(shape);
        Self {
            batch,
            time,
            heads,
            n,
        }
    }

    /// Number of independent `(batch, head)` chains.
    pub fn tasks(&self) -> usize {
        self.batch * self.heads
    }

    /// Number of checkpointed chunks.
    pub fn chunks(&self) -> usize {
        self.time.div_ceil(CHECKPOINT_INTERVAL)
    }

    /// Elements of a `[batch, time, heads, n]` tensor.
    pub fn seq_len(&self) -> usize {
        self.batch * self.time * self.heads * self.n
    }

    /// Elements of a `[batch, heads, n, n]` state.
    pub fn state_len(&self) -> usize {
        self.batch * self.heads * self.n * self.n
    }

    /// Elements of the `[batch, heads, chunks, n, n]` checkpoints.
    pub fn checkpoints_len(&self) -> usize {
        self.state_len() * self.chunks()
    }

    /// Offset of the vector `[b, t, h, ..]` in a `[batch, time, heads, n]` tensor.
    #[inline(always)]
    fn at(&self, b: usize, t: usize, h: usize) -> usize {
        ((b * self.time + t) * self.heads + h) * self.n
    }

    /// True when there is no work (and no output element) at all.
    fn is_empty(&self) -> bool {
        self.tasks() == 0 || self.n == 0
    }
}

/// The six per-token inputs, each contiguous `[batch, time, heads, n]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Inputs<'a> {
    pub r: &'a [f32],
    pub log_w: &'a [f32],
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub a: &'a [f32],
    pub b: &'a [f32],
}

/// Output of [`forward`].
#[derive(Debug)]
pub(crate) struct Forward {
    /// `[batch, time, heads, n]`.
    pub y: Vec<f32>,
    /// `[batch, heads, n, n]`.
    pub state: Vec<f32>,
    /// `[batch, heads, chunks, n, n]` when requested, else empty.
    pub checkpoints: Vec<f32>,
}

/// Gradients returned by [`backward`], in the layout of the corresponding inputs.
#[derive(Debug)]
pub(crate) struct Grads {
    pub r: Vec<f32>,
    pub log_w: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    /// `[batch, heads, n, n]`.
    pub state: Vec<f32>,
}

/// Runs the recurrence from `state` (`[batch, heads, n, n]`).
///
/// With `checkpoint`, also returns the state at the start of every chunk of
/// [`CHECKPOINT_INTERVAL`] steps, for [`backward`].
pub(crate) fn forward(
    dims: Dims,
    x: Inputs<'_>,
    state: &[f32],
    checkpoint: bool,
    parallel: bool,
) -> Forward {
    check_lengths(dims, x);
    assert_eq!(state.len(), dims.state_len(), "wkv7: state length");
    if dims.is_empty() {
        return Forward {
            y: Vec::new(),
            state: state.to_vec(),
            checkpoints: Vec::new(),
        };
    }
    let isa = Isa::detect();
    let nn = dims.n * dims.n;
    let tasks = map_tasks(dims.tasks(), parallel, |task| {
        forward_task(
            isa,
            dims,
            x,
            &state[task * nn..(task + 1) * nn],
            checkpoint,
            task,
        )
    });

    let mut out = Forward {
        y: output_buffer(dims.seq_len()),
        state: Vec::with_capacity(dims.state_len()),
        checkpoints: Vec::with_capacity(if checkpoint {
            dims.checkpoints_len()
        } else {
            0
        }),
    };
    for (task, part) in tasks.into_iter().enumerate() {
        scatter_rows(dims, task, &part.y, &mut out.y);
        out.state.extend_from_slice(&part.state);
        out.checkpoints.extend_from_slice(&part.checkpoints);
    }
    out
}

/// Gradients of all seven inputs, given the gradients `dy` (`[batch, time, heads, n]`) and
/// `d_state` (`[batch, heads, n, n]`) of the two outputs and the `checkpoints` of
/// [`forward`].
pub(crate) fn backward(
    dims: Dims,
    x: Inputs<'_>,
    checkpoints: &[f32],
    dy: &[f32],
    d_state: &[f32],
    parallel: bool,
) -> Grads {
    check_lengths(dims, x);
    assert_eq!(
        checkpoints.len(),
        dims.checkpoints_len(),
        "wkv7: checkpoints length"
    );
    assert_eq!(dy.len(), dims.seq_len(), "wkv7: dy length");
    assert_eq!(d_state.len(), dims.state_len(), "wkv7: d_state length");
    let zeros = || vec![0.0; dims.seq_len()];
    if dims.is_empty() {
        return Grads {
            r: zeros(),
            log_w: zeros(),
            k: zeros(),
            v: zeros(),
            a: zeros(),
            b: zeros(),
            state: d_state.to_vec(),
        };
    }
    let isa = Isa::detect();
    let nn = dims.n * dims.n;
    let chunk_states = dims.chunks() * nn;
    let tasks = map_tasks(dims.tasks(), parallel, |task| {
        backward_task(
            isa,
            dims,
            x,
            &checkpoints[task * chunk_states..(task + 1) * chunk_states],
            dy,
            &d_state[task * nn..(task + 1) * nn],
            task,
        )
    });

    let mut out = Grads {
        r: output_buffer(dims.seq_len()),
        log_w: output_buffer(dims.seq_len()),
        k: output_buffer(dims.seq_len()),
        v: output_buffer(dims.seq_len()),
        a: output_buffer(dims.seq_len()),
        b: output_buffer(dims.seq_len()),
        state: Vec::with_capacity(dims.state_len()),
    };
    for (task, part) in tasks.into_iter().enumerate() {
        scatter_rows(dims, task, &part.r, &mut out.r);
        scatter_rows(dims, task, &part.log_w, &mut out.log_w);
        scatter_rows(dims, task, &part.k, &mut out.k);
        scatter_rows(dims, task, &part.v, &mut out.v);
        scatter_rows(dims, task, &part.a, &mut out.a);
        scatter_rows(dims, task, &part.b, &mut out.b);
        out.state.extend_from_slice(&part.state);
    }
    out
}

fn check_lengths(dims: Dims, x: Inputs<'_>) {
    for (name, len) in [
        ("r", x.r.len()),
        ("log_w", x.log_w.len()),
        ("k", x.k.len()),
        ("v", x.v.len()),
        ("a", x.a.len()),
        ("b", x.b.len()),
    ] {
        assert_eq!(len, dims.seq_len(), "wkv7: length of {name}");
    }
}

/// Copies a task's `[time, n]` rows into their places in a `[batch, time, heads, n]` tensor.
fn scatter_rows(dims: Dims, task: usize, rows: &[f32], out: &mut [f32]) {
    let (b, h, n) = (task / dims.heads, task % dims.heads, dims.n);
    for (t, row) in rows.chunks_exact(n).enumerate() {
        let o = dims.at(b, t, h);
        out[o..o + n].copy_from_slice(row);
    }
}

/// One chain's forward result.
struct TaskForward {
    y: Vec<f32>,
    state: Vec<f32>,
    checkpoints: Vec<f32>,
}

/// One chain's gradients (`[time, n]` rows, plus the `n × n` initial-state gradient).
struct TaskGrads {
    r: Vec<f32>,
    log_w: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
    state: Vec<f32>,
}

/// Calls `$f::<S, N>(simd, n, args…)` with the const `N = n` for the usual head sizes, so that
/// the row loops are compiled (and fully unrolled) separately for each; other sizes use
/// `N = 0`, meaning "read `n` at run time". Head sizes that are not a multiple of the vector
/// width run on one scalar lane.
macro_rules! with_head_size {
    ($simd:ident, $n:expr, $f:ident($($arg:expr),*)) => {{
        let n = $n;
        if n % S::LANES != 0 {
            $f::<Scalar, 0>(Scalar, n, $($arg),*)
        } else {
            match n {
                64 => $f::<S, 64>($simd, n, $($arg),*),
                32 => $f::<S, 32>($simd, n, $($arg),*),
                16 => $f::<S, 16>($simd, n, $($arg),*),
                128 => $f::<S, 128>($simd, n, $($arg),*),
                n => $f::<S, 0>($simd, n, $($arg),*),
            }
        }
    }};
}

/// The head size: the const `N`, or the run-time `n` when `N = 0`.
#[inline(always)]
const fn head_size<const N: usize>(n: usize) -> usize {
    if N == 0 { n } else { N }
}

isa_dispatch! {
    fn forward_task = forward_task_any(
        dims: Dims,
        x: Inputs<'_>,
        state: &[f32],
        checkpoint: bool,
        task: usize,
    ) -> TaskForward
}

#[inline(always)]
fn forward_task_any<S: Simd>(
    simd: S,
    dims: Dims,
    x: Inputs<'_>,
    state: &[f32],
    checkpoint: bool,
    task: usize,
) -> TaskForward {
    with_head_size!(
        simd,
        dims.n,
        forward_task_n(dims, x, state, checkpoint, task)
    )
}

#[inline(always)]
fn forward_task_n<S: Simd, const N: usize>(
    simd: S,
    n: usize,
    dims: Dims,
    x: Inputs<'_>,
    state: &[f32],
    checkpoint: bool,
    task: usize,
) -> TaskForward {
    let n = head_size::<N>(n);
    let (bi, hi) = (task / dims.heads, task % dims.heads);
    let mut s = state[..n * n].to_vec();
    let mut y = output_buffer(dims.time * n);
    let mut checkpoints = Vec::with_capacity(if checkpoint { dims.chunks() * n * n } else { 0 });
    let mut w = vec![0.0; n];
    for (t, y_t) in y.chunks_exact_mut(n).enumerate() {
        if checkpoint && t % CHECKPOINT_INTERVAL == 0 {
            checkpoints.extend_from_slice(&s);
        }
        let o = dims.at(bi, t, hi);
        exp_into(&mut w, &x.log_w[o..o + n]);
        let vecs = StepVectors {
            w: &w,
            k: &x.k[o..o + n],
            v: &x.v[o..o + n],
            a: &x.a[o..o + n],
            b: &x.b[o..o + n],
            r: &x.r[o..o + n],
        };
        step::<S, N>(simd, n, &mut s, vecs, y_t, None);
    }
    TaskForward {
        y,
        state: s,
        checkpoints,
    }
}

/// One token's vectors for one chain, `w = exp(log_w)` already taken.
#[derive(Clone, Copy)]
struct StepVectors<'a> {
    w: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
    a: &'a [f32],
    b: &'a [f32],
    r: &'a [f32],
}

/// Rows of the state processed together by [`step`] and [`back_step`]: independent
/// dot-product chains keep the vector units busy while each row's reductions complete, and
/// the backward's key-indexed accumulators are loaded and stored once per block.
const ROW_BLOCK: usize = 4;

/// One step on one chain's state, in place; writes `y = S·r` and, if asked, `u = S_prev·a`.
#[inline(always)]
fn step<S: Simd, const N: usize>(
    simd: S,
    n: usize,
    s: &mut [f32],
    x: StepVectors<'_>,
    y: &mut [f32],
    mut u_out: Option<&mut [f32]>,
) {
    let n = head_size::<N>(n);
    let blocked = n / ROW_BLOCK * ROW_BLOCK;
    let (head, tail) = s.split_at_mut(blocked * n);
    for (blk, rows) in head.chunks_exact_mut(ROW_BLOCK * n).enumerate() {
        let i = blk * ROW_BLOCK;
        let u = step_rows::<S, N, ROW_BLOCK>(simd, n, rows, x, i, &mut y[i..i + ROW_BLOCK]);
        if let Some(u_out) = u_out.as_deref_mut() {
            u_out[i..i + ROW_BLOCK].copy_from_slice(&u);
        }
    }
    for (r, row) in tail.chunks_exact_mut(n).enumerate() {
        let i = blocked + r;
        let [u] = step_rows::<S, N, 1>(simd, n, row, x, i, &mut y[i..i + 1]);
        if let Some(u_out) = u_out.as_deref_mut() {
            u_out[i] = u;
        }
    }
}

/// Updates the `R` consecutive state rows `i0 … i0+R−1` held in `rows`, writes their outputs
/// to `y` and returns their `u`.
#[inline(always)]
fn step_rows<S: Simd, const N: usize, const R: usize>(
    simd: S,
    n: usize,
    rows: &mut [f32],
    x: StepVectors<'_>,
    i0: usize,
    y: &mut [f32],
) -> [f32; R] {
    let n = head_size::<N>(n);
    let lanes = n / S::LANES;
    let mut acc = [simd.zero(); R];
    for c in 0..lanes {
        let j = c * S::LANES;
        let a = simd.load(&x.a[j..]);
        for (q, acc) in acc.iter_mut().enumerate() {
            *acc = simd.fmadd(simd.load(&rows[q * n + j..]), a, *acc);
        }
    }
    let u = acc.map(|acc| simd.hsum(acc));
    let u_v = u.map(|u| simd.splat(u));
    let v_i: [S::V; R] = core::array::from_fn(|q| simd.splat(x.v[i0 + q]));
    let mut acc = [simd.zero(); R];
    for c in 0..lanes {
        let j = c * S::LANES;
        let (w, k, b, r) = (
            simd.load(&x.w[j..]),
            simd.load(&x.k[j..]),
            simd.load(&x.b[j..]),
            simd.load(&x.r[j..]),
        );
        for (q, acc) in acc.iter_mut().enumerate() {
            let row = &mut rows[q * n + j..];
            let written = simd.fmadd(v_i[q], k, simd.mul(simd.load(row), w));
            let updated = simd.fmadd(u_v[q], b, written);
            simd.store(row, updated);
            *acc = simd.fmadd(updated, r, *acc);
        }
    }
    for (y, acc) in y.iter_mut().zip(acc) {
        *y = simd.hsum(acc);
    }
    u
}

isa_dispatch! {
    fn backward_task = backward_task_any(
        dims: Dims,
        x: Inputs<'_>,
        checkpoints: &[f32],
        dy: &[f32],
        d_state: &[f32],
        task: usize,
    ) -> TaskGrads
}

#[inline(always)]
fn backward_task_any<S: Simd>(
    simd: S,
    dims: Dims,
    x: Inputs<'_>,
    checkpoints: &[f32],
    dy: &[f32],
    d_state: &[f32],
    task: usize,
) -> TaskGrads {
    with_head_size!(
        simd,
        dims.n,
        backward_task_n(dims, x, checkpoints, dy, d_state, task)
    )
}

/// Per-step gradient accumulators over the key index `j`.
struct KeyGrads {
    r: Vec<f32>,
    w: Vec<f32>,
    k: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
}

#[allow(clippy::too_many_arguments)]
// the task's inputs, plus the SIMD token and head size
// Over 80 lines: one SIMD loop over the tokens, its accumulators kept in registers.
#[inline(always)]
fn backward_task_n<S: Simd, const N: usize>(
    simd: S,
    n: usize,
    dims: Dims,
    x: Inputs<'_>,
    checkpoints: &[f32],
    dy: &[f32],
    d_state: &[f32],
    task: usize,
) -> TaskGrads {
    let n = head_size::<N>(n);
    let (bi, hi) = (task / dims.heads, task % dims.heads);
    let nn = n * n;
    let rows = dims.time * n;
    let mut g = TaskGrads {
        r: output_buffer(rows),
        log_w: output_buffer(rows),
        k: output_buffer(rows),
        v: output_buffer(rows),
        a: output_buffer(rows),
        b: output_buffer(rows),
        state: d_state[..nn].to_vec(),
    };
    // Scratch for one chunk: its states S_{t0} … S_{t0+len}, u and w per step.
    let mut states = vec![0.0; (CHECKPOINT_INTERVAL + 1) * nn];
    let mut us = vec![0.0; CHECKPOINT_INTERVAL * n];
    let mut ws = vec![0.0; CHECKPOINT_INTERVAL * n];
    let mut y_scratch = vec![0.0; n];
    let mut acc = KeyGrads {
        r: vec![0.0; n],
        w: vec![0.0; n],
        k: vec![0.0; n],
        a: vec![0.0; n],
        b: vec![0.0; n],
    };

    for c in (0..dims.chunks()).rev() {
        let t0 = c * CHECKPOINT_INTERVAL;
        let len = CHECKPOINT_INTERVAL.min(dims.time - t0);

        // Recompute the chunk's states from its checkpoint.
        states[..nn].copy_from_slice(&checkpoints[c * nn..(c + 1) * nn]);
        for l in 0..len {
            let o = dims.at(bi, t0 + l, hi);
            let w = &mut ws[l * n..(l + 1) * n];
            exp_into(w, &x.log_w[o..o + n]);
            let w = &*w;
            let (done, next) = states.split_at_mut((l + 1) * nn);
            let next = &mut next[..nn];
            next.copy_from_slice(&done[l * nn..]);
            let vecs = StepVectors {
                w,
                k: &x.k[o..o + n],
                v: &x.v[o..o + n],
                a: &x.a[o..o + n],
                b: &x.b[o..o + n],
                r: &x.r[o..o + n],
            };
            step::<S, N>(
                simd,
                n,
                next,
                vecs,
                &mut y_scratch,
                Some(&mut us[l * n..(l + 1) * n]),
            );
        }

        // Reverse recurrence through the chunk.
        for l in (0..len).rev() {
            let t = t0 + l;
            let o = dims.at(bi, t, hi);
            let vecs = StepVectors {
                w: &ws[l * n..(l + 1) * n],
                k: &x.k[o..o + n],
                v: &x.v[o..o + n],
                a: &x.a[o..o + n],
                b: &x.b[o..o + n],
                r: &x.r[o..o + n],
            };
            let prev = &states[l * nn..(l + 1) * nn];
            let cur = &states[(l + 1) * nn..(l + 2) * nn];
            let dv = &mut g.v[t * n..(t + 1) * n];
            let u = &us[l * n..(l + 1) * n];
            back_step::<S, N>(
                simd,
                n,
                &mut g.state,
                [prev, cur],
                vecs,
                u,
                &dy[o..o + n],
                &mut acc,
                dv,
            );
            let row = t * n..(t + 1) * n;
            g.r[row.clone()].copy_from_slice(&acc.r);
            for ((out, &dw), &w) in g.log_w[row.clone()].iter_mut().zip(&acc.w).zip(vecs.w) {
                *out = dw * w;
            }
            g.k[row.clone()].copy_from_slice(&acc.k);
            g.a[row.clone()].copy_from_slice(&acc.a);
            g.b[row].copy_from_slice(&acc.b);
        }
    }
    g
}

/// One reverse step: turns `ds` (gradient w.r.t. `S_t`) into the gradient w.r.t. `S_{t-1}`,
/// writes the key-indexed gradients into `acc` and the value-indexed `dv`. `states` is
/// `[S_{t-1}, S_t]`.
#[allow(clippy::too_many_arguments)] // a hot inner kernel: plain slices, no bundling
#[inline(always)]
fn back_step<S: Simd, const N: usize>(
    simd: S,
    n: usize,
    ds: &mut [f32],
    states: [&[f32]; 2],
    x: StepVectors<'_>,
    u: &[f32],
    dy: &[f32],
    acc: &mut KeyGrads,
    dv: &mut [f32],
) {
    let n = head_size::<N>(n);
    for g in [&mut acc.r, &mut acc.w, &mut acc.k, &mut acc.a, &mut acc.b] {
        g.fill(0.0);
    }
    let [prev, cur] = states;
    let blocked = n / ROW_BLOCK * ROW_BLOCK;
    let (ds_head, ds_tail) = ds.split_at_mut(blocked * n);
    for (blk, ds_rows) in ds_head.chunks_exact_mut(ROW_BLOCK * n).enumerate() {
        let i = blk * ROW_BLOCK;
        let rows = i * n..(i + ROW_BLOCK) * n;
        let states = [&prev[rows.clone()], &cur[rows]];
        back_rows::<S, N, ROW_BLOCK>(simd, n, ds_rows, states, x, i, u, dy, acc, dv);
    }
    for (r, ds_row) in ds_tail.chunks_exact_mut(n).enumerate() {
        let i = blocked + r;
        let states = [&prev[i * n..(i + 1) * n], &cur[i * n..(i + 1) * n]];
        back_rows::<S, N, 1>(simd, n, ds_row, states, x, i, u, dy, acc, dv);
    }
}

/// [`back_step`] for the `R` consecutive rows `i0 … i0+R−1` (`ds` and `states` hold just
/// those rows); the key-indexed accumulators are loaded and stored once per `R` rows.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn back_rows<S: Simd, const N: usize, const R: usize>(
    simd: S,
    n: usize,
    ds: &mut [f32],
    states: [&[f32]; 2],
    x: StepVectors<'_>,
    i0: usize,
    u: &[f32],
    dy: &[f32],
    acc: &mut KeyGrads,
    dv: &mut [f32],
) {
    let n = head_size::<N>(n);
    let lanes = n / S::LANES;
    let [prev, cur] = states;

    // dS_i += dy_i · r ;  dr += dy_i · S_i ;  du_i = dS_i · b ;  dv_i = dS_i · k
    let dy_v: [S::V; R] = core::array::from_fn(|q| simd.splat(dy[i0 + q]));
    let (mut du, mut dv_acc) = ([simd.zero(); R], [simd.zero(); R]);
    for c in 0..lanes {
        let j = c * S::LANES;
        let (r, b, k) = (
            simd.load(&x.r[j..]),
            simd.load(&x.b[j..]),
            simd.load(&x.k[j..]),
        );
        let mut gr = simd.load(&acc.r[j..]);
        for q in 0..R {
            let d = simd.fmadd(dy_v[q], r, simd.load(&ds[q * n + j..]));
            simd.store(&mut ds[q * n + j..], d);
            gr = simd.fmadd(dy_v[q], simd.load(&cur[q * n + j..]), gr);
            du[q] = simd.fmadd(d, b, du[q]);
            dv_acc[q] = simd.fmadd(d, k, dv_acc[q]);
        }
        simd.store(&mut acc.r[j..], gr);
    }
    let du = du.map(|d| simd.hsum(d));
    for (q, d) in dv_acc.into_iter().enumerate() {
        dv[i0 + q] = simd.hsum(d);
    }

    // dw += dS_i ⊙ P_i ; db += u_i · dS_i ; dk += v_i · dS_i ; da += du_i · P_i ;
    // dS_i ← dS_i ⊙ w + du_i · a
    let u_v: [S::V; R] = core::array::from_fn(|q| simd.splat(u[i0 + q]));
    let v_v: [S::V; R] = core::array::from_fn(|q| simd.splat(x.v[i0 + q]));
    let du_v = du.map(|d| simd.splat(d));
    for c in 0..lanes {
        let j = c * S::LANES;
        let (w, a) = (simd.load(&x.w[j..]), simd.load(&x.a[j..]));
        let mut gw = simd.load(&acc.w[j..]);
        let mut gb = simd.load(&acc.b[j..]);
        let mut gk = simd.load(&acc.k[j..]);
        let mut ga = simd.load(&acc.a[j..]);
        for q in 0..R {
            let (d, p) = (simd.load(&ds[q * n + j..]), simd.load(&prev[q * n + j..]));
            gw = simd.fmadd(d, p, gw);
            gb = simd.fmadd(u_v[q], d, gb);
            gk = simd.fmadd(v_v[q], d, gk);
            ga = simd.fmadd(du_v[q], p, ga);
            simd.store(&mut ds[q * n + j..], simd.fmadd(du_v[q], a, simd.mul(d, w)));
        }
        simd.store(&mut acc.w[j..], gw);
        simd.store(&mut acc.b[j..], gb);
        simd.store(&mut acc.k[j..], gk);
        simd.store(&mut acc.a[j..], ga);
    }
}
