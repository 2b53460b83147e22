//! One optimizer step's forward passes: the batch split into shards, one per replica
//! ([`crate::data_parallel`]), each with the router masks and column-dropout masks the
//! undivided batch would draw, and its part of the batch's loss.

use burn::backend::DispatchDevice;
use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};
use colswarm_model::{Example, LabelSpace, to_batch};
use colswarm_swarm::{FrozenSpecialist, Orchestrator, Routing, Swarm};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::loss::{TargetCounts, shard_loss};
use crate::error::TrainError;
use crate::run::{DROPOUT_STREAM, rng_for};

/// The routing generator of a shard whose first table is table `first` of its batch:
/// `batch_rng` (the whole batch's generator) after the draws [`SpecialistRouter::sample`] makes
/// for the tables before it, one `random::<f32>()` per table and specialist, tables in order.
/// Every table of the shard then gets the mask it gets in the undivided batch.
///
/// [`SpecialistRouter::sample`]: colswarm_swarm::SpecialistRouter::sample
pub(crate) fn shard_routing_rng(
    batch_rng: &ChaCha8Rng,
    first: usize,
    n_specialists: usize,
) -> ChaCha8Rng {
    let mut rng = batch_rng.clone();
    for _ in 0..first * n_specialists {
        let _: f32 = rng.random();
    }
    rng
}

/// Copies of the specialists for a replica on `device` (shared, not copied, on `main`).
pub(super) fn specialists_on(
    specialists: &[FrozenSpecialist],
    device: &Device,
    main: &Device,
) -> Vec<FrozenSpecialist> {
    if device == main {
        return specialists.to_vec();
    }
    let device = device.clone().without_autodiff();
    specialists
        .iter()
        .map(|s| {
            FrozenSpecialist::from_model(
                s.name(),
                s.model().clone().to_device(&device),
                s.config().clone(),
            )
        })
        .collect()
}

/// What one shard of a training step hands to its replica's thread.
pub(super) struct ShardInput<'a> {
    pub(super) examples: &'a [&'a Example],
    pub(super) specialists: Vec<FrozenSpecialist>,
    pub(super) routing: ChaCha8Rng,
    /// Where its column-dropout mask comes from; `None` without dropout.
    pub(super) dropout: Option<DropoutDraw>,
}

/// Where a shard's column-dropout mask comes from: the run's seed, the step, and the place of
/// the shard's first table in the step's batch.
#[derive(Clone, Copy, Debug)]
pub(super) struct DropoutDraw {
    pub(super) p: f32,
    pub(super) seed: u64,
    pub(super) step: usize,
    pub(super) batch_size: usize,
    pub(super) first: usize,
}

impl DropoutDraw {
    /// The mask of the shard's tables: one row per column, in [`TableBatch::column_rows`]
    /// order, each element `0` (dropped, probability `p`) or `1/(1-p)`. Table `i` of the batch
    /// gets the same rows whatever shard it lands in, so resumed and data-parallel runs agree.
    ///
    /// # Shapes
    ///
    /// - returns `[columns of the shard's tables, d_model]`
    ///
    /// [`TableBatch::column_rows`]: colswarm_swarm::TableBatch::column_rows
    fn mask(&self, columns_per_table: &[usize], d_model: usize, device: &Device) -> Tensor<2> {
        let keep = 1.0 / (1.0 - self.p);
        let mut values = Vec::new();
        for (i, &columns) in columns_per_table.iter().enumerate() {
            let table = self.step * self.batch_size + self.first + i;
            let mut rng = rng_for(self.seed, DROPOUT_STREAM, table as u64);
            values.extend((0..columns * d_model).map(|_| {
                if rng.random::<f32>() < self.p {
                    0.0
                } else {
                    keep
                }
            }));
        }
        let rows = values.len() / d_model.max(1);
        Tensor::<2>::from_data(TensorData::new(values, [rows, d_model]), device)
    }
}

/// What one shard of a training step reports besides its loss; its numbers stay on the
/// device.
#[derive(Debug)]
pub(super) struct ShardReport {
    /// Its loss (its part of the batch's loss), `[1]`, detached.
    pub(super) loss: Tensor<1>,
    pub(super) cta: Option<Tensor<1>>,
    pub(super) cpa: Option<Tensor<1>>,
    /// Active (table, specialist) pairs (`[1]`) and all pairs.
    pub(super) active: Tensor<1>,
    pub(super) gates: usize,
}

/// Forward pass and loss of one shard on its replica.
pub(super) fn shard_step(
    replica: &Orchestrator,
    input: ShardInput<'_>,
    space: &LabelSpace,
    batch: TargetCounts,
    cpa_weight: f64,
) -> Result<(Tensor<1>, ShardReport), TrainError> {
    let ShardInput {
        examples,
        specialists,
        mut routing,
        dropout,
    } = input;
    let swarm = Swarm::new(replica.clone(), specialists)?;
    let tables = to_batch(examples);
    // Both heads read the dropped-out columns (CPA reads `out.columns` in the loss).
    let column_mask = dropout.map(|draw| {
        let columns_per_table: Vec<usize> = tables.queries.iter().map(Vec::len).collect();
        draw.mask(
            &columns_per_table,
            replica.primary.d_model(),
            &replica.device(),
        )
    });
    // On a GPU the mask stays on the device; on the CPU it comes back, free, so that the
    // specialists skip the tables it closes to them.
    let routing = if shares_host_memory(&replica.device()) {
        Routing::Sample(&mut routing)
    } else {
        Routing::SampleOnDevice(&mut routing)
    };
    let out = swarm.forward_masked(&tables, routing, column_mask)?;
    let losses = shard_loss(replica, space, examples, &out, cpa_weight, batch)
        .ok_or_else(|| TrainError::Config("a batch without targets".into()))?;
    let report = ShardReport {
        loss: losses.total.clone().detach(),
        cta: losses.cta,
        cpa: losses.cpa,
        active: out.router.mask.clone().sum(),
        gates: out.router.mask.dims().iter().product(),
    };
    Ok((losses.total, report))
}

/// Whether `device` keeps its tensors in host memory (burn's Flex CPU backend), where reading
/// one back costs no wait.
pub(crate) fn shares_host_memory(device: &Device) -> bool {
    fn flex(device: &DispatchDevice) -> bool {
        #[allow(unreachable_patterns)] // which variants exist depends on burn's features
        match device {
            DispatchDevice::Flex(_) => true,
            DispatchDevice::Autodiff(inner) => flex(inner),
            _ => false,
        }
    }
    flex(device.as_dispatch())
}

/// Sums the shards' parts that are there, on `device` (`None` when none is).
pub(super) fn sum_parts(
    parts: impl Iterator<Item = Option<Tensor<1>>>,
    device: &Device,
) -> Option<Tensor<1>> {
    parts
        .flatten()
        .map(|t| t.to_device(device))
        .reduce(|a, b| a + b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Distribution;
    use colswarm_swarm::SpecialistRouterConfig;

    use crate::data_parallel::shard_ranges;
    use crate::run::ROUTING_STREAM;

    /// The masks a router samples for a batch, and those it samples for the batch's shards with
    /// [`shard_routing_rng`], are the same: a data-parallel step routes every table as the
    /// one-device step does.
    #[test]
    fn shards_draw_the_masks_of_the_undivided_batch() {
        let device = Device::flex();
        let (tables, specialists, d) = (7, 3, 8);
        // Zero gate weights: every gate is 0.5, the masks are as random as they get.
        let router = SpecialistRouterConfig::new(d, specialists).init(&device);
        let pooled = Tensor::<2>::random([tables, d], Distribution::Default, &device);
        let batch_rng = rng_for(3, ROUTING_STREAM, 11);
        let whole = router.sample(pooled.clone(), &mut batch_rng.clone()).active;
        let sharded = |skip: bool| -> Vec<Vec<bool>> {
            shard_ranges(tables, 3)
                .into_iter()
                .flat_map(|range| {
                    let first = if skip { range.start } else { 0 };
                    let mut rng = shard_routing_rng(&batch_rng, first, specialists);
                    let rows = pooled.clone().narrow(0, range.start, range.len());
                    router.sample(rows, &mut rng).active
                })
                .collect()
        };
        assert_eq!(sharded(true), whole);
        // Every shard starting from the batch's generator repeats the first tables' draws.
        assert_ne!(sharded(false), whole);
    }

    #[test]
    fn column_dropout_masks_follow_the_table_not_the_shard() {
        let device = Device::flex();
        let (d, columns) = (16, [3usize, 1, 4, 2]);
        let draw = |first: usize| DropoutDraw {
            p: 0.25,
            seed: 5,
            step: 9,
            batch_size: 4,
            first,
        };
        let values = |draw: DropoutDraw, columns: &[usize]| -> Vec<f32> {
            let mask = draw.mask(columns, d, &device);
            mask.into_data().try_to_vec::<f32>().unwrap()
        };
        let whole = values(draw(0), &columns);
        assert_eq!(whole.len(), 10 * d);
        // Every element is dropped or scaled to keep the expectation, and both happen.
        let dropped = whole.iter().filter(|&&v| v == 0.0).count();
        let kept_scaled = |v: f32| (v - 4.0 / 3.0).abs() < 1e-6;
        assert!(whole.iter().all(|&v| v == 0.0 || kept_scaled(v)));
        assert!(
            (20..=60).contains(&dropped),
            "{dropped} of 160 dropped at p = 0.25"
        );
        // Two shards (tables 0-1 and 2-3) draw exactly the undivided batch's rows.
        let shards = [
            values(draw(0), &columns[..2]),
            values(draw(2), &columns[2..]),
        ];
        assert_eq!(shards.concat(), whole);
        // Another step draws other masks.
        let later = DropoutDraw {
            step: 10,
            ..draw(0)
        };
        assert_ne!(values(later, &columns), whole);
    }
}
