//! Right-padding of batched sequences.

use burn::tensor::{Bool, Device, Int, Tensor};

/// Which positions of a right-padded batch hold real tokens.
///
/// Sequence `b` occupies positions `0..lengths[b]`; later positions are padding. Padding never
/// reaches the state: the recurrence is fed an identity update there, and the token-shift
/// memories are taken at each sequence's last real token.
#[derive(Clone, Debug)]
pub struct Padding {
    /// 1.0 at real tokens, 0.0 at padding: `[batch, time]`.
    pub valid: Tensor<2>,
    /// Index of each sequence's last real token (0 for empty sequences): `[batch]`.
    pub last_index: Tensor<1, Int>,
    /// True for sequences with no token at all: `[batch, 1]`.
    pub empty: Tensor<2, Bool>,
}

impl Padding {
    /// Builds the padding description for sequences of the given lengths, padded to `time`.
    ///
    /// # Panics
    ///
    /// If a length exceeds `time`.
    pub fn new(lengths: &[usize], time: usize, device: &Device) -> Self {
        let batch = lengths.len();
        let mut valid = Vec::with_capacity(batch * time);
        for &len in lengths {
            assert!(
                len <= time,
                "sequence length {len} exceeds padded length {time}"
            );
            valid.extend((0..time).map(|t| if t < len { 1.0f32 } else { 0.0 }));
        }
        let last: Vec<i64> = lengths
            .iter()
            .map(|&l| l.saturating_sub(1) as i64)
            .collect();
        let empty: Vec<bool> = lengths.iter().map(|&l| l == 0).collect();
        Self {
            valid: Tensor::<1>::from_data(valid.as_slice(), device).reshape([batch, time]),
            last_index: Tensor::from_data(last.as_slice(), device),
            empty: Tensor::<1, Bool>::from_data(empty.as_slice(), device).reshape([batch, 1]),
        }
    }

    /// Picks, for every sequence, the vector at its last real token; sequences with no token
    /// keep `previous`.
    ///
    /// # Shapes
    ///
    /// - `x`: `[batch, time, d]`
    /// - `previous`: `[batch, d]`
    /// - returns `[batch, d]`
    pub fn last(&self, x: Tensor<3>, previous: Tensor<2>) -> Tensor<2> {
        let [batch, _, d] = x.dims();
        let index = self
            .last_index
            .clone()
            .reshape([batch, 1, 1])
            .expand([batch, 1, d]);
        let last = x.gather(1, index).reshape([batch, d]);
        last.mask_where(self.empty.clone().expand([batch, d]), previous)
    }
}
