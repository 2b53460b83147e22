//! Safetensors checkpoints for any burn module, written atomically and verified on load.
//!
//! A checkpoint is a safetensors file whose tensors are named by module path
//! (`blocks.0.att.receptance.weight`) and whose metadata holds:
//!
//! - `colswarm.format`: [`FORMAT`];
//! - `colswarm.checksum`: the SHA-256 of every tensor's name, shape and bytes, in name order;
//! - caller entries, e.g. `colswarm.rwkv.config` (the model config as JSON).
//!
//! Files are written to a temporary sibling and renamed into place, so a crash never leaves a
//! half-written checkpoint. Loading checks the header against the file size, every tensor's
//! name, dtype, shape and finiteness, and the checksum; errors name the file and the tensor.
//! Loading never executes anything from the file.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{Device, Tensor, TensorData};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use sha2::{Digest, Sha256};

use crate::config::RwkvConfig;
use crate::error::RwkvError;
use crate::model::Rwkv;

#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;

/// Value of the `colswarm.format` metadata entry.
pub const FORMAT: &str = "colswarm-safetensors-v1";
/// Metadata key of the RWKV config.
pub const RWKV_CONFIG_KEY: &str = "colswarm.rwkv.config";
const FORMAT_KEY: &str = "colswarm.format";
const CHECKSUM_KEY: &str = "colswarm.checksum";

/// A float tensor read out of a module: its path name, shape and values.
#[derive(Debug, Clone)]
pub struct NamedTensor {
    /// Dotted module path, e.g. `blocks.0.ln1.gamma`.
    pub name: String,
    /// Shape.
    pub shape: Vec<usize>,
    /// Row-major values.
    pub values: Vec<f32>,
}

/// Collects every float parameter of a module with its path name.
pub fn named_tensors<M: Module>(module: &M) -> Vec<NamedTensor> {
    #[derive(Default)]
    struct Collector {
        prefix: Vec<String>,
        tensors: Vec<NamedTensor>,
    }
    impl ModuleVisitor for Collector {
        fn enter_module(&mut self, name: &str, _container_type: &str) {
            self.prefix.push(name.to_string());
        }
        fn exit_module(&mut self, _name: &str, _container_type: &str) {
            self.prefix.pop();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let tensor = param.val();
            let data = tensor.to_data().convert::<f32>();
            self.tensors.push(NamedTensor {
                // The param's own field name is the last component pushed by enter_module.
                name: self.prefix.join("."),
                shape: tensor.dims().to_vec(),
                values: data.try_to_vec::<f32>().unwrap_or_default(),
            });
        }
    }
    let mut collector = Collector::default();
    module.visit(&mut collector);
    collector.tensors
}

/// SHA-256 over names, shapes and little-endian values, in name order.
fn checksum<'a>(tensors: impl IntoIterator<Item = (&'a str, &'a [usize], &'a [u8])>) -> String {
    let mut sorted: Vec<_> = tensors.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut hasher = Sha256::new();
    for (name, shape, bytes) in sorted {
        hasher.update((name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update((shape.len() as u64).to_le_bytes());
        for dim in shape {
            hasher.update((*dim as u64).to_le_bytes());
        }
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    format!("{:x}", hasher.finalize())
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> RwkvError + '_ {
    move |source| RwkvError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `bytes` to `path` atomically: a temporary sibling, fsync, rename.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), RwkvError> {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "checkpoint".into());
    let tmp = path.with_file_name(format!(".{file_name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io_error(path))
}

/// How a checkpoint stores its values. Loading accepts either and gives f32 tensors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// 32-bit floats, as trained (the default).
    #[default]
    F32,
    /// IEEE half floats: half the bytes, about three significant digits. For large linear
    /// tables whose answers do not hang on the fourth digit.
    F16,
}

/// Saves every float parameter of `module` to `path` as f32, with `metadata` entries added.
pub fn save_module<M: Module>(
    module: &M,
    metadata: HashMap<String, String>,
    path: &Path,
) -> Result<(), RwkvError> {
    save_module_as(module, metadata, path, Precision::F32)
}

/// [`save_module`] at the given precision.
pub fn save_module_as<M: Module>(
    module: &M,
    metadata: HashMap<String, String>,
    path: &Path,
    precision: Precision,
) -> Result<(), RwkvError> {
    let tensors = named_tensors(module);
    let bytes: Vec<Vec<u8>> = tensors
        .iter()
        .map(|t| match precision {
            Precision::F32 => t.values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Precision::F16 => t
                .values
                .iter()
                .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
                .collect(),
        })
        .collect();
    let dtype = match precision {
        Precision::F32 => Dtype::F32,
        Precision::F16 => Dtype::F16,
    };
    let mut metadata = metadata;
    metadata.insert(FORMAT_KEY.into(), FORMAT.into());
    metadata.insert(
        CHECKSUM_KEY.into(),
        checksum(
            tensors
                .iter()
                .zip(&bytes)
                .map(|(t, b)| (t.name.as_str(), t.shape.as_slice(), b.as_slice())),
        ),
    );
    let mut views = Vec::with_capacity(tensors.len());
    for (tensor, data) in tensors.iter().zip(&bytes) {
        let view = TensorView::new(dtype, tensor.shape.clone(), data).map_err(|e| {
            RwkvError::Corrupted {
                path: path.to_path_buf(),
                reason: format!("tensor `{}`: {e}", tensor.name),
            }
        })?;
        views.push((tensor.name.clone(), view));
    }
    let serialized =
        safetensors::serialize(views, Some(metadata)).map_err(|e| RwkvError::Corrupted {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    write_atomically(path, &sorted_header(serialized))
}

/// The same file with its JSON header's keys sorted: `safetensors` writes the metadata map in
/// hash order, so equal models would otherwise give different bytes (and checksums).
fn sorted_header(mut bytes: Vec<u8>) -> Vec<u8> {
    let Some(len) = bytes
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| 8 + n <= bytes.len())
    else {
        return bytes;
    };
    let header = &bytes[8..8 + len];
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(header) else {
        return bytes;
    };
    // serde_json's maps are ordered by key; the padding (spaces) is kept.
    let Ok(sorted) = serde_json::to_vec(&value) else {
        return bytes;
    };
    if sorted.len() <= len {
        bytes[8..8 + sorted.len()].copy_from_slice(&sorted);
        bytes[8 + sorted.len()..8 + len].fill(b' ');
    }
    bytes
}

/// A checkpoint file read and verified, ready to load into modules.
#[derive(Debug)]
pub struct CheckpointFile {
    path: PathBuf,
    bytes: Vec<u8>,
    metadata: HashMap<String, String>,
}

impl CheckpointFile {
    /// Reads `path` and verifies its structure and checksum.
    pub fn open(path: &Path) -> Result<Self, RwkvError> {
        let bytes = std::fs::read(path).map_err(io_error(path))?;
        Self::from_bytes(path, bytes)
    }

    /// Verifies the structure and checksum of a checkpoint already in memory; `path` only names
    /// it in errors.
    pub fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<Self, RwkvError> {
        let file = Self::parse(path, bytes)?;
        match file.metadata.get(FORMAT_KEY) {
            Some(format) if format == FORMAT => {}
            other => {
                return Err(RwkvError::Metadata {
                    path: file.path.clone(),
                    key: FORMAT_KEY.into(),
                    reason: format!("expected `{FORMAT}`, found {other:?}"),
                });
            }
        }
        file.verify_checksum()?;
        Ok(file)
    }

    /// Parses the header (structure only: no format or checksum check).
    fn parse(path: &Path, bytes: Vec<u8>) -> Result<Self, RwkvError> {
        let corrupted = |reason: String| RwkvError::Corrupted {
            path: path.to_path_buf(),
            reason,
        };
        check_claimed_bytes(&bytes).map_err(corrupted)?;
        // `read_metadata` checks that the header's offsets fit in the bytes actually present.
        let (_, header) =
            SafeTensors::read_metadata(&bytes).map_err(|e| corrupted(e.to_string()))?;
        let metadata = header.metadata().clone().unwrap_or_default();
        Ok(Self {
            path: path.to_path_buf(),
            bytes,
            metadata,
        })
    }

    fn tensors(&self) -> Result<SafeTensors<'_>, RwkvError> {
        SafeTensors::deserialize(&self.bytes).map_err(|e| RwkvError::Corrupted {
            path: self.path.clone(),
            reason: e.to_string(),
        })
    }

    fn verify_checksum(&self) -> Result<(), RwkvError> {
        let recorded = self
            .metadata
            .get(CHECKSUM_KEY)
            .ok_or_else(|| RwkvError::Metadata {
                path: self.path.clone(),
                key: CHECKSUM_KEY.into(),
                reason: "missing".into(),
            })?;
        let tensors = self.tensors()?;
        let entries = tensors.tensors();
        let computed = checksum(
            entries
                .iter()
                .map(|(name, view)| (name.as_str(), view.shape(), view.data())),
        );
        if &computed != recorded {
            return Err(RwkvError::Checksum {
                path: self.path.clone(),
                recorded: recorded.clone(),
                computed,
            });
        }
        Ok(())
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A metadata entry.
    pub fn metadata(&self, key: &str) -> Result<&str, RwkvError> {
        self.metadata
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| RwkvError::Metadata {
                path: self.path.clone(),
                key: key.into(),
                reason: "missing".into(),
            })
    }

    /// Replaces every float parameter of `module` with the tensor of the same path name, on
    /// `device`. Every parameter must be present with the same shape, and no tensor may be left
    /// over.
    pub fn load_into<M: Module>(&self, module: M, device: &Device) -> Result<M, RwkvError> {
        let tensors = self.tensors()?;
        let mut stored: BTreeMap<String, TensorView<'_>> = tensors.tensors().into_iter().collect();
        let mut loader = Loader {
            path: &self.path,
            stored: &mut stored,
            device,
            prefix: Vec::new(),
            error: None,
        };
        let module = module.map(&mut loader);
        if let Some(error) = loader.error {
            return Err(error);
        }
        if let Some(name) = stored.keys().next() {
            return Err(RwkvError::UnexpectedTensor {
                path: self.path.clone(),
                name: name.clone(),
            });
        }
        Ok(module)
    }
}

/// Refuses a header whose tensors claim bytes past the end of the file, naming the first such
/// tensor. `safetensors` refuses them too, but only after adding the claimed end to the header
/// size unchecked: offsets summing to nearly 2⁶⁴ overflow there (a panic wherever overflow checks
/// are on), so they are checked here first. Headers that do not parse are left to `safetensors`
/// to report.
fn check_claimed_bytes(bytes: &[u8]) -> Result<(), String> {
    let Some(header_len) = bytes
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .and_then(|n| usize::try_from(n).ok())
    else {
        return Ok(());
    };
    let Some(header) = 8usize
        .checked_add(header_len)
        .and_then(|end| bytes.get(8..end))
    else {
        return Ok(());
    };
    let Ok(entries) = serde_json::from_slice::<BTreeMap<String, serde_json::Value>>(header) else {
        return Ok(());
    };
    let data_len = (bytes.len() - 8 - header_len) as u64;
    for (name, entry) in &entries {
        let end = entry
            .get("data_offsets")
            .and_then(|offsets| offsets.get(1))
            .and_then(serde_json::Value::as_u64);
        if let Some(end) = end
            && end > data_len
        {
            return Err(format!(
                "tensor `{name}` claims bytes up to offset {end} but the file holds only {data_len} bytes of tensor data"
            ));
        }
    }
    Ok(())
}

struct Loader<'a, 'b> {
    path: &'a Path,
    stored: &'a mut BTreeMap<String, TensorView<'b>>,
    device: &'a Device,
    prefix: Vec<String>,
    error: Option<RwkvError>,
}

impl Loader<'_, '_> {
    fn take<const D: usize>(
        &mut self,
        name: &str,
        expected: &[usize],
    ) -> Result<Tensor<D>, RwkvError> {
        let path = self.path.to_path_buf();
        let view = self
            .stored
            .remove(name)
            .ok_or_else(|| RwkvError::MissingTensor {
                path: path.clone(),
                name: name.into(),
                expected: expected.to_vec(),
            })?;
        let values: Vec<f32> = match view.dtype() {
            Dtype::F32 => view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::F16 => view
                .data()
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            other => {
                return Err(RwkvError::DType {
                    path,
                    name: name.into(),
                    found: format!("{other:?}"),
                });
            }
        };
        if view.shape() != expected {
            return Err(RwkvError::ShapeMismatch {
                path,
                name: name.into(),
                expected: expected.to_vec(),
                found: view.shape().to_vec(),
            });
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err(RwkvError::NonFinite {
                path,
                name: name.into(),
            });
        }
        let shape: [usize; D] = expected.try_into().map_err(|_| RwkvError::ShapeMismatch {
            path: self.path.to_path_buf(),
            name: name.into(),
            expected: expected.to_vec(),
            found: view.shape().to_vec(),
        })?;
        Ok(Tensor::from_data(
            TensorData::new(values, shape),
            self.device,
        ))
    }
}

impl ModuleMapper for Loader<'_, '_> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.prefix.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.prefix.pop();
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        if self.error.is_some() {
            return param;
        }
        // The param's own name is the last path component, pushed by enter_module.
        let name = self.prefix.join(".");
        let expected = param.lazy_shape().dims::<D>().to_vec();
        match self.take::<D>(&name, &expected) {
            Ok(tensor) => {
                let id = param.id;
                param.transform_for_load(tensor, id)
            }
            Err(error) => {
                self.error = Some(error);
                param
            }
        }
    }
}

/// Saves an RWKV model and its config to `path` (atomically).
pub fn save_checkpoint(model: &Rwkv, config: &RwkvConfig, path: &Path) -> Result<(), RwkvError> {
    let config_json =
        serde_json::to_string(config).map_err(|e| RwkvError::InvalidConfig(e.to_string()))?;
    let metadata = HashMap::from([(RWKV_CONFIG_KEY.to_string(), config_json)]);
    save_module(model, metadata, path)
}

/// Loads an RWKV model and its config from `path` onto `device`.
pub fn load_checkpoint(path: &Path, device: &Device) -> Result<(Rwkv, RwkvConfig), RwkvError> {
    load_checkpoint_file(&CheckpointFile::open(path)?, device)
}

/// Loads an RWKV model and its config from an opened checkpoint onto `device`.
pub fn load_checkpoint_file(
    file: &CheckpointFile,
    device: &Device,
) -> Result<(Rwkv, RwkvConfig), RwkvError> {
    let config = read_config(file)?;
    // Refuse configs that claim more weights than the file holds before allocating them (two
    // bytes a parameter at least: f32 or f16).
    let stored_bytes = file.bytes.len();
    if config.num_params().saturating_mul(2) > stored_bytes {
        return Err(RwkvError::Metadata {
            path: file.path.clone(),
            key: RWKV_CONFIG_KEY.into(),
            reason: format!(
                "the config describes {} parameters but the file holds only {stored_bytes} bytes",
                config.num_params()
            ),
        });
    }
    let model = file.load_into(config.init(0, device), device)?;
    Ok((model, config))
}

/// Reads and validates the RWKV config stored in a checkpoint.
pub fn read_config(file: &CheckpointFile) -> Result<RwkvConfig, RwkvError> {
    let json = file.metadata(RWKV_CONFIG_KEY)?;
    let config: RwkvConfig = serde_json::from_str(json).map_err(|e| RwkvError::Metadata {
        path: file.path().to_path_buf(),
        key: RWKV_CONFIG_KEY.into(),
        reason: e.to_string(),
    })?;
    config.validate().map_err(|e| RwkvError::Metadata {
        path: file.path().to_path_buf(),
        key: RWKV_CONFIG_KEY.into(),
        reason: e.to_string(),
    })?;
    Ok(config)
}
