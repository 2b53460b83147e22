//! Frozen specialist checkpoints.

use std::ops::Range;
use std::path::{Path, PathBuf};

use burn::tensor::{Device, Int, Tensor, TensorData};
use colswarm_rwkv::{Rwkv, RwkvConfig, load_checkpoint};

use crate::alignment::StateShape;
use crate::checksum::sha256_file;
use crate::error::SwarmError;

/// An RWKV-7 checkpoint of any size that reads tables and hands its recurrent state over.
///
/// Its weights live on a device *without* autodiff, so they can never receive gradients: the
/// states it returns enter the orchestrator's graph as constants.
#[derive(Clone, Debug)]
pub struct FrozenSpecialist {
    name: String,
    model: Rwkv,
    config: RwkvConfig,
    source: Option<(PathBuf, String)>,
}

impl FrozenSpecialist {
    /// Loads a checkpoint written by [`colswarm_rwkv::save_checkpoint`].
    pub fn load(name: &str, path: &Path, device: &Device) -> Result<Self, SwarmError> {
        let device = device.clone().without_autodiff();
        let checksum = sha256_file(path)?;
        let (model, config) = load_checkpoint(path, &device)?;
        Ok(Self {
            name: name.to_string(),
            model,
            config,
            source: Some((path.to_path_buf(), checksum)),
        })
    }

    /// Wraps an in-memory model (moved off autodiff).
    pub fn from_model(name: &str, model: Rwkv, config: RwkvConfig) -> Self {
        use burn::module::Module;
        Self {
            name: name.to_string(),
            model: model.valid(),
            config,
            source: None,
        }
    }

    /// The specialist's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The checkpoint path and its SHA-256, when loaded from a file.
    pub fn source(&self) -> Option<(&Path, &str)> {
        self.source.as_ref().map(|(p, c)| (p.as_path(), c.as_str()))
    }

    /// The model's config.
    pub fn config(&self) -> &RwkvConfig {
        &self.config
    }

    /// The model (read-only).
    pub fn model(&self) -> &Rwkv {
        &self.model
    }

    /// Shapes of the states it produces.
    pub fn state_shape(&self) -> StateShape {
        StateShape {
            layers: self.config.n_layers,
            heads: self.config.n_heads(),
            head_size: self.config.head_size,
            d_model: self.config.d_model,
        }
    }

    /// [`column_readings`] of this specialist (no gradients).
    ///
    /// # Shapes
    ///
    /// - returns `[columns, d_model]`, columns in table order then span order
    pub fn read_columns(
        &self,
        tables: &[&[u32]],
        spans: &[Vec<Range<usize>>],
        device: &Device,
    ) -> Tensor<2> {
        column_readings(
            &self.model,
            tables,
            spans,
            &device.clone().without_autodiff(),
        )
    }

    /// [`Self::read`] and [`Self::read_columns`] from one pass over the tables.
    ///
    /// # Shapes
    ///
    /// - returns one `[tables.len(), heads, N, N]` tensor per layer, and `[columns, d_model]`
    pub fn read_with_columns(
        &self,
        tables: &[&[u32]],
        spans: &[Vec<Range<usize>>],
        device: &Device,
    ) -> (Vec<Tensor<4>>, Tensor<2>) {
        let device = device.clone().without_autodiff();
        let (tokens, lengths) = pad(tables, &device);
        let out = self.model.forward(tokens, Some(&lengths), None);
        let columns = crate::pooling::span_means(out.hidden, spans);
        (
            out.state.layers.into_iter().map(|l| l.wkv).collect(),
            columns,
        )
    }

    /// Reads the given tables (token ids, unpadded) and returns the per-layer WKV states after
    /// each table's last token.
    ///
    /// # Shapes
    ///
    /// - returns one `[tables.len(), heads, N, N]` tensor per layer
    pub fn read(&self, tables: &[&[u32]], device: &Device) -> Vec<Tensor<4>> {
        let device = device.clone().without_autodiff();
        let (tokens, lengths) = pad(tables, &device);
        self.model.read_wkv_states(tokens, Some(&lengths))
    }
}

/// A model's reading of columns: the mean of its hidden states over each column's span of its
/// table's tokens (zeros for an empty span). Specialists are pretrained to put what they know
/// here, and the swarm and the linear probes read it the same way.
///
/// # Shapes
///
/// - `tables`: one token sequence per table; `spans`: per table, its columns' token ranges
/// - returns `[columns, d_model]`, columns in table order then span order
pub fn column_readings(
    model: &Rwkv,
    tables: &[&[u32]],
    spans: &[Vec<Range<usize>>],
    device: &Device,
) -> Tensor<2> {
    let (tokens, lengths) = pad(tables, device);
    let hidden = model.forward(tokens, Some(&lengths), None).hidden;
    crate::pooling::span_means(hidden, spans)
}

/// Right-pads token sequences into a `[batch, time]` tensor (pad id 0; padding never reaches the
/// state).
pub(crate) fn pad(sequences: &[&[u32]], device: &Device) -> (Tensor<2, Int>, Vec<usize>) {
    let lengths: Vec<usize> = sequences.iter().map(|s| s.len()).collect();
    let time = lengths.iter().copied().max().unwrap_or(0).max(1);
    let mut flat = vec![0i64; sequences.len() * time];
    for (row, seq) in sequences.iter().enumerate() {
        for (t, &tok) in seq.iter().enumerate() {
            flat[row * time + t] = i64::from(tok);
        }
    }
    let tokens = Tensor::from_data(TensorData::new(flat, [sequences.len(), time]), device);
    (tokens, lengths)
}
