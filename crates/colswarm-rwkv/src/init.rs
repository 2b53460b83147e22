//! Seeded parameter construction, shared by every colswarm module.
//!
//! burn's device RNG may be global to the process, so parallel tests and concurrent training
//! runs would interfere; colswarm draws every initial weight from its own seeded generator.

use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::{Device, Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Builds parameters from a seeded generator.
#[derive(Debug)]
pub struct ParamFactory<'a> {
    rng: ChaCha8Rng,
    device: &'a Device,
}

impl<'a> ParamFactory<'a> {
    /// A factory drawing from `seed`, creating parameters on `device`.
    pub fn new(seed: u64, device: &'a Device) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            device,
        }
    }

    /// A sub-factory with an independent stream, so adding a parameter to one layer does not
    /// shift the random numbers of every later layer.
    pub fn fork(&mut self) -> ParamFactory<'a> {
        ParamFactory {
            rng: ChaCha8Rng::seed_from_u64(self.rng.random()),
            device: self.device,
        }
    }

    /// A parameter holding `values` (row-major) with `shape`.
    pub fn from_values<const D: usize>(
        &self,
        values: Vec<f32>,
        shape: [usize; D],
    ) -> Param<Tensor<D>> {
        Param::from_tensor(Tensor::from_data(
            TensorData::new(values, shape),
            self.device,
        ))
    }

    /// A parameter filled with `value`.
    pub fn constant<const D: usize>(&self, value: f32, shape: [usize; D]) -> Param<Tensor<D>> {
        let len = shape.iter().product();
        self.from_values(vec![value; len], shape)
    }

    /// Uniform in `[-bound, bound]`.
    pub fn uniform<const D: usize>(&mut self, bound: f32, shape: [usize; D]) -> Param<Tensor<D>> {
        let len = shape.iter().product();
        let values = (0..len)
            .map(|_| self.rng.random_range(-bound..=bound))
            .collect();
        self.from_values(values, shape)
    }

    /// A linear layer `[d_input, d_output]` with weights (and bias) uniform in
    /// `±1/√d_input` (PyTorch's default for `nn.Linear`).
    pub fn linear(&mut self, d_input: usize, d_output: usize, bias: bool) -> Linear {
        let bound = 1.0 / (d_input as f32).sqrt();
        Linear {
            weight: self.uniform(bound, [d_input, d_output]),
            bias: bias.then(|| self.uniform(bound, [d_output])),
        }
    }
}
