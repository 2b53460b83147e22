//! Data-parallel gradients built from burn's own pieces: one batch is split into shards, each
//! shard runs its forward and backward pass on its own replica of the module (on its own device,
//! on its own thread), and the shards' gradients are summed on the main device, ready for one
//! optimizer step there.
//!
//! The recipe, for a module `M` on the main device and a list of devices:
//!
//! 1. replicate the module on each shard's device (as [`Module::fork`] does: same [`ParamId`]s,
//!    values copied, a fresh autodiff graph of its own; see [`replica`] for why not `fork`);
//! 2. on one thread per shard ([`std::thread::scope`]), compute the shard's loss on its replica
//!    and back-propagate it; [`GradientsParams::from_grads`] keys the gradients by parameter id;
//! 3. move each shard's gradients to the main device ([`GradientsParams::to_device`]) and add
//!    them up with [`GradientsAccumulator`], in shard order (so the result does not depend on
//!    which thread finishes first).
//!
//! The sum of the shards' gradients is the gradient of the sum of their losses. For a loss that
//! is a mean over the batch, each shard's loss must therefore be its mean weighted by its share
//! of the batch (`b_k / B`), so that the shards' losses add up to the full batch's mean loss; the
//! loss function passed to [`data_parallel_grads`] is responsible for that weighting.
//!
//! This works on every backend, several replicas on one device included (which is how it is
//! tested on the CPU). burn 0.22.1 also has a native all-reduce
//! (`burn::tensor::distributed::DistributedContext` with `Tensor::set_distributed`), but only its
//! CubeCL backends implement it (NCCL on CUDA), and burn's flex CPU backend panics on it, so
//! colswarm never calls it: the summation above runs on every backend.
//!
//! [`ParamId`]: burn::module::ParamId

use std::ops::Range;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::{Device, Tensor};

/// One shard of a batch: the device its replica runs on and its part of the input.
#[derive(Debug)]
pub struct Shard<I> {
    /// The replica's device (an autodiff device; several shards may share one).
    pub device: Device,
    /// The shard's input, handed to the loss function on the shard's thread.
    pub input: I,
}

/// What a data-parallel pass produced.
#[derive(Debug)]
pub struct ParallelGrads<O> {
    /// Gradients of the sum of the shards' losses, keyed by parameter id, on the main device.
    pub grads: GradientsParams,
    /// What each shard's loss function returned beside its loss, in shard order.
    pub outputs: Vec<O>,
}

/// How many of `module`'s parameters have a gradient holding a NaN or an infinity, counted on
/// the device (`[1]`, as a float; `None` when no parameter has a gradient): the training driver
/// reads it back with the step's loss at its logging cadence, not inside the step. A finite
/// loss can still give one (a square root at 0, an overflow in the backward pass), and one such
/// step would poison the weights and Adam's moments.
pub fn non_finite_gradients<M: Module>(module: &M, grads: &GradientsParams) -> Option<Tensor<1>> {
    /// `Σ|g|` of every gradient: NaN and ±inf survive it, and finite values stay finite unless
    /// they overflow it, which is as bad a gradient.
    struct Totals<'a> {
        grads: &'a GradientsParams,
        totals: Vec<Tensor<1>>,
    }
    impl ModuleVisitor for Totals<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(grad) = self.grads.get::<D>(param.id) {
                self.totals.push(grad.abs().sum());
            }
        }
    }
    let mut visitor = Totals {
        grads,
        totals: Vec::new(),
    };
    module.visit(&mut visitor);
    if visitor.totals.is_empty() {
        return None;
    }
    Some(
        Tensor::cat(visitor.totals, 0)
            .is_finite()
            .bool_not()
            .float()
            .sum(),
    )
}

/// Splits `n` rows into at most `parts` contiguous shards of near-equal size.
///
/// # Shapes
///
/// - returns `min(n, max(parts, 1))` ranges that cover `0..n` in order; their lengths differ by
///   at most one, the longer ones first (`n = 8, parts = 3` gives `0..3, 3..6, 6..8`);
/// - `n = 0` gives no range (there is nothing to shard).
pub fn shard_ranges(n: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.max(1).min(n);
    if parts == 0 {
        return Vec::new();
    }
    let (base, extra) = (n / parts, n % parts);
    let mut start = 0;
    (0..parts)
        .map(|k| {
            let len = base + usize::from(k < extra);
            let range = start..start + len;
            start += len;
            range
        })
        .collect()
}

/// A replica of `model` on `device`: the same parameter ids and values, each parameter a fresh
/// autodiff leaf, as [`Module::fork`] makes it, but detached *before* it is moved.
///
/// `fork` moves each parameter with an autodiff op and detaches the copy afterwards, so the
/// move stays in the graph as a child of the model's own parameter, and burn 0.22.1 frees such a
/// node only once that parameter is dropped. A parameter that gets no gradient (the CPA head
/// when no training set has relations, the router without specialists) is never replaced by the
/// optimizer, so each step added a node to its graph, and burn walks every graph after each
/// backward pass: an epoch on GitTables alone took 3 to 4.5 times as long by the tenth.
fn replica<M: Module>(model: &M, device: &Device) -> M {
    struct Replicate<'a>(&'a Device);
    impl ModuleMapper for Replicate<'_> {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            param.map(|tensor| {
                let require_grad = tensor.is_require_grad();
                let copy = tensor.detach().to_device(self.0).detach();
                if require_grad {
                    copy.require_grad()
                } else {
                    copy
                }
            })
        }
    }
    model.clone().map(&mut Replicate(device))
}

/// The gradients of `Σ_k loss(replica_k, input_k)` with respect to `model`'s parameters, each
/// shard computed on a replica of `model` on the shard's device, all shards
/// concurrently; the gradients are summed on `main`, the device `model` lives on, where an
/// optimizer step can use them directly (`optimizer.step(lr, model, grads)`).
///
/// `loss` runs once per shard, on the shard's own thread, with the shard's replica and input;
/// it returns the shard's loss (a one-element tensor on the replica's device, part of the
/// replica's graph) and anything the caller wants back (its value, statistics). `model` itself
/// is neither changed nor used in a graph; after the optimizer step, the next call replicates
/// the updated model again.
///
/// With a single shard no thread is spawned. With no shard the gradients are empty.
///
/// # Errors
///
/// The first error of a loss function, in shard order (every shard runs to the end first).
///
/// # Panics
///
/// Re-raises a panic of a shard's thread (a bug of the loss function, never a user error).
pub fn data_parallel_grads<M, I, O, E, F>(
    model: &M,
    main: &Device,
    shards: Vec<Shard<I>>,
    loss: F,
) -> Result<ParallelGrads<O>, E>
where
    M: Module,
    I: Send,
    O: Send,
    E: Send,
    F: Fn(&M, I) -> Result<(Tensor<1>, O), E> + Sync,
{
    // Forward and backward of one shard; its gradients end up on the main device.
    let run = |replica: M, input: I| -> Result<(GradientsParams, O), E> {
        let (value, output) = loss(&replica, input)?;
        let grads = GradientsParams::from_grads(value.backward(), &replica);
        Ok((grads.to_device(main, &replica), output))
    };
    let results: Vec<Result<(GradientsParams, O), E>> = if shards.len() == 1 {
        shards
            .into_iter()
            .map(|shard| run(replica(model, &shard.device), shard.input))
            .collect()
    } else {
        // Replicas are made here (a module is `Send`, not necessarily `Sync`) and moved in.
        let jobs: Vec<(M, I)> = shards
            .into_iter()
            .map(|shard| (replica(model, &shard.device), shard.input))
            .collect();
        std::thread::scope(|scope| {
            let handles: Vec<_> = jobs
                .into_iter()
                .map(|(replica, input)| {
                    let run = &run;
                    scope.spawn(move || run(replica, input))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        })
    };
    let mut accumulator = GradientsAccumulator::<M>::new();
    let mut outputs = Vec::with_capacity(results.len());
    for result in results {
        let (grads, output) = result?;
        accumulator.accumulate(model, grads);
        outputs.push(output);
    }
    Ok(ParallelGrads {
        grads: accumulator.grads(),
        outputs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::{ModuleVisitor, Param};
    use burn::nn::{Linear, LinearConfig};
    use burn::tensor::activation::tanh;
    use burn::tensor::{Distribution, TensorData};

    /// Two linear layers with a non-linearity between them: gradients of the first layer depend
    /// on the second's weights, as in any real network.
    #[derive(Module, Debug)]
    struct Mlp {
        a: Linear,
        b: Linear,
    }

    impl Mlp {
        fn new(device: &Device) -> Self {
            Mlp {
                a: LinearConfig::new(6, 5).init(device),
                b: LinearConfig::new(5, 3).init(device),
            }
        }

        /// Mean squared error over `x`'s rows.
        ///
        /// # Shapes
        ///
        /// - `x`: `[rows, 6]`, `y`: `[rows, 3]` → `[1]`
        fn loss(&self, x: Tensor<2>, y: Tensor<2>) -> Tensor<1> {
            let out = self.b.forward(tanh(self.a.forward(x)));
            (out - y).square().sum_dim(1).mean()
        }
    }

    /// Every parameter's gradient, flattened, in module order (empty where it has none).
    fn flat_grads(model: &Mlp, grads: &GradientsParams) -> Vec<Vec<f32>> {
        struct Collect<'a>(&'a GradientsParams, Vec<Vec<f32>>);
        impl ModuleVisitor for Collect<'_> {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                let grad = self.0.get::<D>(param.id);
                self.1.push(grad.map_or_else(Vec::new, |g| {
                    g.into_data().try_into_vec_as::<f32>().unwrap()
                }));
            }
        }
        let mut visitor = Collect(grads, Vec::new());
        model.visit(&mut visitor);
        visitor.1
    }

    fn rows(t: &Tensor<2>, range: Range<usize>) -> Tensor<2> {
        t.clone().narrow(0, range.start, range.len())
    }

    /// Largest `|a - b| / max(|b|, 1e-3)` over all gradient entries.
    fn max_relative_error(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .flat_map(|(x, y)| {
                assert_eq!(x.len(), y.len());
                assert!(!y.is_empty(), "a parameter got no gradient");
                x.iter()
                    .zip(y)
                    .map(|(p, q)| (p - q).abs() / q.abs().max(1e-3))
            })
            .fold(0.0, f32::max)
    }

    /// Full-batch gradients vs. the sum of shard gradients (each shard's mean weighted by its
    /// share of the batch), with `replicas` shards on the same autodiff device.
    fn compare(n: usize, replicas: usize) -> (f32, Vec<usize>) {
        let device = Device::flex().autodiff();
        let model = Mlp::new(&device);
        let x = Tensor::<2>::random([n, 6], Distribution::Default, &device);
        let y = Tensor::<2>::random([n, 3], Distribution::Default, &device);

        let full = model.loss(x.clone(), y.clone());
        let full = GradientsParams::from_grads(full.backward(), &model);

        let ranges = shard_ranges(n, replicas);
        let sizes: Vec<usize> = ranges.iter().map(Range::len).collect();
        let shards = ranges
            .into_iter()
            .map(|r| Shard {
                device: device.clone(),
                input: (rows(&x, r.clone()), rows(&y, r.clone()), r.len()),
            })
            .collect();
        let parallel = data_parallel_grads(&model, &device, shards, |replica: &Mlp, input| {
            let (x, y, len) = input;
            let weight = len as f64 / n as f64;
            Ok::<_, ()>((replica.loss(x, y) * weight, len))
        })
        .unwrap();
        assert_eq!(parallel.outputs, sizes, "outputs come back in shard order");
        let error = max_relative_error(
            &flat_grads(&model, &parallel.grads),
            &flat_grads(&model, &full),
        );
        (error, sizes)
    }

    #[test]
    fn two_replicas_on_half_batches_give_the_full_batch_gradients() {
        let (error, sizes) = compare(8, 2);
        assert_eq!(sizes, [4, 4]);
        assert!(error < 1e-5, "relative error {error}");
    }

    #[test]
    fn an_infinite_gradient_of_a_finite_loss_is_counted() {
        let count = |t: Option<Tensor<1>>| t.unwrap().into_scalar::<f32>();
        let device = Device::flex().autodiff();
        let model = Mlp::new(&device);
        let x = Tensor::<2>::random([4, 6], Distribution::Default, &device);
        let y = Tensor::<2>::random([4, 3], Distribution::Default, &device);
        let grads = GradientsParams::from_grads(model.loss(x.clone(), y).backward(), &model);
        assert_eq!(count(non_finite_gradients(&model, &grads)), 0.0);

        // sqrt(0) is 0, its derivative is infinite: the loss stays finite, one gradient does not.
        let loss = model.a.weight.val().mul_scalar(0.0).sqrt().sum();
        assert!(loss.clone().into_scalar::<f32>().is_finite());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        assert_eq!(count(non_finite_gradients(&model, &grads)), 1.0);
    }

    #[test]
    fn unequal_shards_give_the_full_batch_gradients() {
        // 3 and 5 rows: weights 3/8 and 5/8.
        let device = Device::flex().autodiff();
        let model = Mlp::new(&device);
        let x = Tensor::<2>::random([8, 6], Distribution::Default, &device);
        let y = Tensor::<2>::random([8, 3], Distribution::Default, &device);
        let full = model.loss(x.clone(), y.clone());
        let full = GradientsParams::from_grads(full.backward(), &model);
        let shards = || {
            [0..3, 3..8]
                .into_iter()
                .map(|r| Shard {
                    device: device.clone(),
                    input: (rows(&x, r.clone()), rows(&y, r)),
                })
                .collect()
        };
        let parallel = data_parallel_grads(&model, &device, shards(), |replica: &Mlp, (x, y)| {
            let weight = x.dims()[0] as f64 / 8.0;
            Ok::<_, ()>((replica.loss(x, y) * weight, ()))
        })
        .unwrap();
        let error = max_relative_error(
            &flat_grads(&model, &parallel.grads),
            &flat_grads(&model, &full),
        );
        assert!(error < 1e-5, "relative error {error}");

        // The same shards without the weights sum two means: the check above can fail.
        let unweighted = data_parallel_grads(&model, &device, shards(), |replica: &Mlp, (x, y)| {
            Ok::<_, ()>((replica.loss(x, y), ()))
        })
        .unwrap();
        let error = max_relative_error(
            &flat_grads(&model, &unweighted.grads),
            &flat_grads(&model, &full),
        );
        assert!(error > 1e-2, "unweighted shards matched: {error}");
    }

    #[test]
    fn three_replicas_and_one_replica_match_too() {
        let (error, sizes) = compare(7, 3);
        assert_eq!(sizes, [3, 2, 2]);
        assert!(error < 1e-5, "relative error {error}");
        let (error, sizes) = compare(5, 1);
        assert_eq!(sizes, [5]);
        assert!(error < 1e-6, "relative error {error}");
    }

    #[test]
    fn the_model_is_left_untouched_and_errors_come_back_in_shard_order() {
        let device = Device::flex().autodiff();
        let model = Mlp::new(&device);
        let before = model.a.weight.val().into_data();
        let shards = (0..3)
            .map(|k| Shard {
                device: device.clone(),
                input: k,
            })
            .collect();
        let result = data_parallel_grads(&model, &device, shards, |replica: &Mlp, k: usize| {
            if k >= 1 {
                return Err(format!("shard {k} failed"));
            }
            let x = Tensor::<2>::ones([2, 6], &device);
            Ok((replica.loss(x.clone(), x.narrow(1, 0, 3)), ()))
        });
        assert_eq!(result.unwrap_err(), "shard 1 failed");
        assert_eq!(model.a.weight.val().into_data(), before);
        let none = data_parallel_grads(&model, &device, Vec::<Shard<()>>::new(), |_, ()| {
            Ok::<_, ()>((
                Tensor::<1>::from_data(TensorData::from([0f32]), &device),
                (),
            ))
        })
        .unwrap();
        assert!(none.grads.is_empty() && none.outputs.is_empty());
    }

    #[test]
    fn shard_ranges_cover_the_batch_in_order() {
        assert_eq!(shard_ranges(8, 3), [0..3, 3..6, 6..8]);
        assert_eq!(shard_ranges(8, 2), [0..4, 4..8]);
        assert_eq!(shard_ranges(2, 4), [0..1, 1..2]);
        // No part at all still gives one shard: the whole batch.
        let whole = shard_ranges(5, 0);
        assert_eq!((whole.len(), whole[0].clone()), (1, 0..5));
        assert!(shard_ranges(0, 2).is_empty());
        for n in 0..20 {
            for parts in 0..6 {
                let ranges = shard_ranges(n, parts);
                let lens: Vec<usize> = ranges.iter().map(Range::len).collect();
                assert_eq!(lens.iter().sum::<usize>(), n);
                assert!(lens.iter().all(|&l| l > 0));
                assert!(lens.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1));
                assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
            }
        }
    }
}
