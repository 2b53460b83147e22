//! Mapping a specialist's recurrent state onto the primary's shapes.

use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor, TensorData};

/// Shapes of the WKV state of one model: layers, heads, head size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StateShape {
    /// Number of blocks.
    pub layers: usize,
    /// Heads per block.
    pub heads: usize,
    /// Head size `N` (the state of a head is `N × N`).
    pub head_size: usize,
    /// Width of the hidden states, and so of the model's column readings.
    pub d_model: usize,
}

/// Maps a specialist's per-layer WKV states to the primary's shapes, per head:
///
/// ```text
/// S'_h = A_h · (Σ_g M[h, g] · S_g) · B_hᵀ        (A_h, B_h: N_p × N_s;  M: H_p × H_s)
/// ```
///
/// `A` acts on the value side, `B` on the key side, `M` mixes heads when the head counts differ.
/// Primary layer `l` reads specialist layer `round(l·(L_s−1)/(L_p−1))` (matched by relative
/// depth). When heads and head sizes agree the map is the identity and has no parameters.
/// Parameters per primary layer: `2·H_p·N_p·N_s + H_p·H_s`, against Aegir's dense
/// `H_p·N_p²·H_s·N_s²`.
#[derive(Module, Debug)]
pub struct AlignmentProjection {
    /// Value-side maps `[layers_p, H_p, N_p, N_s]`, absent for the identity.
    pub value_map: Option<Param<Tensor<4>>>,
    /// Key-side maps `[layers_p, H_p, N_p, N_s]`, absent for the identity.
    pub key_map: Option<Param<Tensor<4>>>,
    /// Head mixing `[layers_p, H_p, H_s]`, absent for the identity.
    pub head_mix: Option<Param<Tensor<3>>>,
    /// Column fusion: the specialist's column readings → the primary's column representations,
    /// `[d_s, d_p]`, starting at zero (absent without column fusion).
    pub column_map: Option<Param<Tensor<2>>>,
    source_layers: usize,
    target_layers: usize,
}

/// `count` row-major `rows × cols` blocks, each ones on the diagonal (a truncated identity).
fn identity_blocks(count: usize, rows: usize, cols: usize) -> Vec<f32> {
    let mut blocks = vec![0.0f32; count * rows * cols];
    for block in blocks.chunks_mut(rows * cols) {
        for i in 0..rows.min(cols) {
            block[i * cols + i] = 1.0;
        }
    }
    blocks
}

/// The specialist layer read by primary layer `target` (relative depth).
pub fn source_layer(target: usize, target_layers: usize, source_layers: usize) -> usize {
    if target_layers <= 1 || source_layers <= 1 {
        return 0;
    }
    let position = target as f64 * (source_layers - 1) as f64 / (target_layers - 1) as f64;
    (position.round() as usize).min(source_layers - 1)
}

impl AlignmentProjection {
    /// Builds the alignment from `source` (specialist) to `target` (primary) shapes.
    ///
    /// Non-identity maps start as "truncated identity" maps (`A = B = I` on the shared
    /// channels) with uniform head mixing, so an aligned state starts close to the specialist's.
    pub fn new(source: StateShape, target: StateShape, device: &Device) -> Self {
        Self::build(
            source,
            target,
            !Self::has_parameters(source, target),
            device,
        )
    }

    /// Whether the alignment from `source` to `target` has parameters: only when heads or
    /// head sizes differ.
    pub fn has_parameters(source: StateShape, target: StateShape) -> bool {
        source.heads != target.heads || source.head_size != target.head_size
    }

    fn build(source: StateShape, target: StateShape, identity: bool, device: &Device) -> Self {
        let (lp, hp, np, hs, ns) = (
            target.layers,
            target.heads,
            target.head_size,
            source.heads,
            source.head_size,
        );
        let (value_map, key_map, head_mix) = if identity {
            (None, None, None)
        } else {
            let eye = identity_blocks(lp * hp, np, ns);
            let map = || {
                Param::from_tensor(Tensor::<4>::from_data(
                    TensorData::new(eye.clone(), [lp, hp, np, ns]),
                    device,
                ))
            };
            let mix = Param::from_tensor(Tensor::<3>::full([lp, hp, hs], 1.0 / hs as f32, device));
            (Some(map()), Some(map()), Some(mix))
        };
        Self {
            value_map,
            key_map,
            head_mix,
            column_map: None,
            source_layers: source.layers,
            target_layers: target.layers,
        }
    }

    /// The same alignment with a column map from `source`'s column readings to `target`'s
    /// width, at zero, so the swarm's answers start as they were without it.
    pub fn with_column_map(
        mut self,
        source: StateShape,
        target: StateShape,
        device: &Device,
    ) -> Self {
        self.column_map = Some(Param::from_tensor(Tensor::<2>::zeros(
            [source.d_model, target.d_model],
            device,
        )));
        self
    }

    /// Maps a specialist's column readings to the primary's width; `None` without a column map.
    ///
    /// # Shapes
    ///
    /// - `readings`: `[columns, d_s]`; returns `[columns, d_p]`
    pub fn align_columns(&self, readings: Tensor<2>) -> Option<Tensor<2>> {
        self.column_map.as_ref().map(|m| readings.matmul(m.val()))
    }

    /// Number of trainable parameters.
    pub fn param_count(&self) -> usize {
        self.num_params()
    }

    /// Aligns the specialist states of every layer.
    ///
    /// # Shapes
    ///
    /// - `states[l]`: `[batch, H_s, N_s, N_s]`, one per specialist layer
    /// - returns one `[batch, H_p, N_p, N_p]` per primary layer
    pub fn forward(&self, states: &[Tensor<4>]) -> Vec<Tensor<4>> {
        (0..self.target_layers)
            .map(|layer| {
                let source =
                    states[source_layer(layer, self.target_layers, self.source_layers)].clone();
                self.align_layer(layer, source)
            })
            .collect()
    }

    fn align_layer(&self, layer: usize, state: Tensor<4>) -> Tensor<4> {
        let (Some(value_map), Some(key_map), Some(head_mix)) =
            (&self.value_map, &self.key_map, &self.head_mix)
        else {
            return state;
        };
        let [batch, hs, ns, _] = state.dims();
        let pick = |t: Tensor<4>| {
            let [_, hp, np, ns] = t.dims();
            t.narrow(0, layer, 1).reshape([hp, np, ns])
        };
        let a = pick(value_map.val()); // [hp, np, ns]
        let b = pick(key_map.val());
        let [hp, np, _] = a.dims();
        let mix = head_mix.val().narrow(0, layer, 1).reshape([hp, hs]);
        // Σ_g M[h,g]·S_g  → [batch, hp, ns, ns]
        let mixed = mix
            .unsqueeze::<3>()
            .expand([batch, hp, hs])
            .matmul(state.reshape([batch, hs, ns * ns]))
            .reshape([batch, hp, ns, ns]);
        let a = a.unsqueeze::<4>().expand([batch, hp, np, ns]);
        let b_t = b
            .swap_dims(1, 2)
            .unsqueeze::<4>()
            .expand([batch, hp, ns, np]);
        a.matmul(mixed).matmul(b_t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(layers: usize, heads: usize, head_size: usize) -> StateShape {
        StateShape {
            layers,
            heads,
            head_size,
            d_model: heads * head_size,
        }
    }

    #[test]
    fn a_column_map_starts_at_zero_and_maps_widths() {
        let device = Device::flex();
        let (source, target) = (shape(1, 1, 8), shape(2, 2, 4));
        let align = AlignmentProjection::new(source, target, &device);
        assert!(
            align
                .align_columns(Tensor::<2>::ones([3, 8], &device))
                .is_none()
        );
        let align = align.with_column_map(source, target, &device);
        // Value and key maps [2, 2, 4, 8], head mixing [2, 2, 1], the column map [8, 8].
        assert_eq!(align.param_count(), 2 * (2 * 2 * 4 * 8) + 2 * 2 + 8 * 8);
        let out = align
            .align_columns(Tensor::<2>::ones([3, 8], &device))
            .unwrap();
        assert_eq!(out.dims(), [3, 8]);
        assert_eq!(out.abs().sum().into_scalar::<f32>(), 0.0);
    }

    #[test]
    fn same_shapes_are_the_identity_without_parameters() {
        // docs/ORCHESTRATOR.md §9 A1.
        let device = Device::flex();
        let align = AlignmentProjection::new(shape(2, 2, 4), shape(2, 2, 4), &device);
        assert_eq!(align.param_count(), 0);
        let s = Tensor::<4>::random([3, 2, 4, 4], burn::tensor::Distribution::Default, &device);
        let out = align.forward(&[s.clone(), s.clone() * 2.0]);
        out[1].to_data().assert_eq(&(s * 2.0).to_data(), true);
    }

    #[test]
    fn scalar_to_two_channel_map_matches_hand_values() {
        // H=1, N 1 → 2, A = [1, 2]ᵀ, B = [3, 4]ᵀ, S = [[2]] → A·S·Bᵀ = [[6, 8], [12, 16]].
        let device = Device::flex();
        let mut align = AlignmentProjection::new(shape(1, 1, 1), shape(1, 1, 2), &device);
        let set = |values: Vec<f32>| {
            Param::from_tensor(Tensor::<4>::from_data(
                TensorData::new(values, [1, 1, 2, 1]),
                &device,
            ))
        };
        align.value_map = Some(set(vec![1.0, 2.0]));
        align.key_map = Some(set(vec![3.0, 4.0]));
        let s = Tensor::<4>::from_data(TensorData::new(vec![2.0f32], [1, 1, 1, 1]), &device);
        let out = align.forward(&[s]).remove(0);
        assert_eq!(
            out.into_data().try_to_vec::<f32>().unwrap(),
            vec![6.0, 8.0, 12.0, 16.0]
        );
    }

    #[test]
    fn parameters_are_per_head_bilinear_not_dense() {
        // docs/ORCHESTRATOR.md §9 A3: (4 heads, 64) → (8, 64) per layer: 2·8·64·64 + 8·4,
        // not 536,870,912.
        let align = AlignmentProjection::new(shape(1, 4, 64), shape(1, 8, 64), &Device::flex());
        assert_eq!(align.param_count(), 2 * 8 * 64 * 64 + 8 * 4);
    }

    #[test]
    fn layers_are_matched_by_relative_depth() {
        assert_eq!(
            (0..4).map(|l| source_layer(l, 4, 2)).collect::<Vec<_>>(),
            vec![0, 0, 1, 1]
        );
        assert_eq!(
            (0..2).map(|l| source_layer(l, 2, 6)).collect::<Vec<_>>(),
            vec![0, 5]
        );
        assert_eq!(source_layer(0, 1, 3), 0);
    }
}
