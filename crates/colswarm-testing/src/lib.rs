//! Helpers for the tests and benchmarks of the workspace's burn modules (a dev-dependency only:
//! nothing here is part of the libraries' API).

use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::{Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The direction [`perturb`] moves parameters in: `len` values uniform in `[-1, 1]` per
/// parameter, drawn in module traversal order from `seed`.
#[derive(Debug)]
pub struct Direction(ChaCha8Rng);

impl Direction {
    /// Starts the direction stream of `seed`.
    pub fn new(seed: u64) -> Self {
        Self(ChaCha8Rng::seed_from_u64(seed))
    }

    /// The next parameter's `len` direction values.
    pub fn next(&mut self, len: usize) -> Vec<f32> {
        (0..len)
            .map(|_| self.0.random_range(-1.0f32..=1.0))
            .collect()
    }
}

/// Adds `scale · d` to every float parameter, `d` being the [`Direction`] of `seed`.
///
/// The official RWKV-7 initialisation zeroes the output projections, which makes every block the
/// identity; tests perturb the weights so that every term of the equations matters. Finite
/// difference checks use it to step along a random direction.
pub fn perturb<M: Module>(module: M, seed: u64, scale: f32) -> M {
    struct Perturb {
        direction: Direction,
        scale: f32,
    }
    impl ModuleMapper for Perturb {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            let tensor = param.val();
            let dims = tensor.dims();
            let mut values = tensor
                .to_data()
                .convert::<f32>()
                .try_to_vec::<f32>()
                .unwrap_or_default();
            let step = self.direction.next(values.len());
            for (value, delta) in values.iter_mut().zip(step) {
                *value += self.scale * delta;
            }
            let moved = Tensor::<D>::from_data(TensorData::new(values, dims), &tensor.device());
            let id = param.id;
            param.transform_for_load(moved, id)
        }
    }
    module.map(&mut Perturb {
        direction: Direction::new(seed),
        scale,
    })
}
