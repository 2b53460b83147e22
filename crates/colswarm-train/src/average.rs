//! Weight averaging: one model whose parameters are the element-wise mean of several model
//! directories' (stochastic weight averaging, Izmailov et al. 2018, over a run's last epochs).
//!
//! With a constant learning rate the weights keep circling a minimum and the dev score swings
//! from one epoch to the next; their mean sits nearer the middle. Only models of one run make
//! sense to average (same architecture, labels and frozen specialists), and that is checked;
//! domain experts, where the models have them, must be the same and are copied unchanged.

use std::path::{Path, PathBuf};

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{Tensor, TensorData};
use colswarm_swarm::Swarm;
use colswarm_swarm::manifest::{MANIFEST_FILE, SwarmManifest, localize_specialists};

use crate::error::TrainError;
use crate::run::{ModelParts, RunDir, read_state};
use colswarm_model::{
    ExpertList, ExpertRef, LabelSpace, ModelDir, SerializeSettings, load_model_extras,
};

/// One float parameter on the host: its shape and values.
type HostParam = (Vec<usize>, Vec<f32>);

/// Float parameters of a module in module order, or the index of the first one whose values
/// could not be read as `f32`.
struct Collect(Result<Vec<HostParam>, usize>);

impl ModuleVisitor for Collect {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let Ok(params) = &mut self.0 else {
            return;
        };
        let tensor = param.val();
        let shape = tensor.dims().to_vec();
        match tensor.into_data().convert::<f32>().try_to_vec::<f32>() {
            Ok(values) => params.push((shape, values)),
            Err(_) => self.0 = Err(params.len()),
        }
    }
}

/// The float parameters of `module` (see [`Collect`]); `which` names the module in errors.
fn parameters<M: Module>(module: &M, which: usize) -> Result<Vec<HostParam>, String> {
    let mut visitor = Collect(Ok(Vec::new()));
    module.visit(&mut visitor);
    visitor
        .0
        .map_err(|i| format!("parameter {i} of model {which} is not readable as f32"))
}

/// Replaces the float parameters, in module order, with the given values (ids kept).
struct Replace {
    values: std::vec::IntoIter<HostParam>,
}

impl ModuleMapper for Replace {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, tensor, mapper) = param.consume();
        let Some((shape, values)) = self.values.next() else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let device = tensor.device();
        let tensor = Tensor::from_data(TensorData::new(values, shape), &device);
        Param::from_mapped_value(id, tensor, mapper)
    }
}

/// The element-wise mean of `modules`' float parameters, in the first module's structure.
/// Parameters equal in every module (frozen ones) are kept exactly.
///
/// Errors name the first parameter (by its index in module order) whose shape differs.
pub fn average_modules<M: Module>(modules: Vec<M>) -> Result<M, String> {
    let mut modules = modules.into_iter();
    let Some(first) = modules.next() else {
        return Err("no model to average".into());
    };
    let first_params = parameters(&first, 1)?;
    let mut sums: Vec<(Vec<usize>, Vec<f64>)> = first_params
        .iter()
        .map(|(shape, v)| (shape.clone(), v.iter().map(|&x| f64::from(x)).collect()))
        .collect();
    let firsts: Vec<Vec<f32>> = first_params.into_iter().map(|(_, v)| v).collect();
    let mut all_equal = vec![true; sums.len()];
    let mut count = 1usize;
    for (m, module) in modules.enumerate() {
        let params = parameters(&module, m + 2)?;
        if params.len() != sums.len() {
            return Err(format!(
                "model {} has {} parameters, the first has {}",
                m + 2,
                params.len(),
                sums.len()
            ));
        }
        for (i, ((shape, values), (sum_shape, sum))) in params.iter().zip(&mut sums).enumerate() {
            if shape != sum_shape || values.len() != sum.len() {
                return Err(format!(
                    "parameter {i} of model {} has shape {shape:?}, the first's is {sum_shape:?}",
                    m + 2
                ));
            }
            all_equal[i] &= *values == firsts[i];
            for (s, v) in sum.iter_mut().zip(values) {
                *s += f64::from(*v);
            }
        }
        count += 1;
    }
    let values: Vec<HostParam> = sums
        .into_iter()
        .zip(firsts)
        .zip(all_equal)
        .map(|(((shape, sum), first), equal)| {
            let mean = if equal {
                first
            } else {
                sum.into_iter().map(|s| (s / count as f64) as f32).collect()
            };
            (shape, mean)
        })
        .collect();
    Ok(first.map(&mut Replace {
        values: values.into_iter(),
    }))
}

/// Averages the model directories `inputs` (checkpoints of one run) into a new model
/// directory `out`, written into a temporary directory beside it and renamed into place.
///
/// The inputs must share their configuration, label lists, serialization settings and
/// specialist checkpoints (the manifests' checksums), else the error names the input that
/// differs.
pub fn average_model_dirs(inputs: &[PathBuf], out: &Path) -> Result<(), TrainError> {
    let device = burn::tensor::Device::flex();
    let mut swarms = Vec::with_capacity(inputs.len());
    let first_experts = match inputs.first() {
        Some(first) => expert_manifests(first)?,
        None => Vec::new(),
    };
    let mut reference: Option<(SwarmManifest, SerializeSettings)> = None;
    let mut space = None;
    for dir in inputs {
        let (swarm, manifest) = Swarm::load(dir, &device)?;
        let (labels, serialize) = load_model_extras(dir, &manifest)?;
        match &reference {
            None => {
                reference = Some((manifest, serialize));
                space = Some(labels);
            }
            Some((first, first_serialize)) => {
                if space.as_ref().map(namespace_files) != Some(namespace_files(&labels)) {
                    return Err(TrainError::Run {
                        path: dir.clone(),
                        reason: format!(
                            "cannot be averaged with {}: other n-gram readers or added heads",
                            inputs[0].display()
                        ),
                    });
                }
                let first = Averaged {
                    dir: &inputs[0],
                    manifest: first,
                    serialize: first_serialize,
                    experts: &first_experts,
                };
                first.check_same(dir, &manifest, &serialize)?;
            }
        }
        swarms.push(swarm);
    }
    let (Some((manifest, serialize)), Some(space)) = (reference, space) else {
        return Err(TrainError::Config("no model directory to average".into()));
    };
    let specialists = swarms[0].specialists.clone();
    let orchestrators: Vec<_> = swarms.into_iter().map(|s| s.orchestrator).collect();
    let orchestrator = average_modules(orchestrators).map_err(|reason| TrainError::Run {
        path: inputs[0].clone(),
        reason,
    })?;
    let swarm = Swarm::new(orchestrator, specialists)?;
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| TrainError::io(parent, e))?;
    let name = out
        .file_name()
        .map_or_else(|| "model".to_string(), |n| n.to_string_lossy().into_owned());
    let temp = parent.join(format!(".tmp-average-{name}-{}", std::process::id()));
    if temp.exists() {
        std::fs::remove_dir_all(&temp).map_err(|e| TrainError::io(&temp, e))?;
    }
    let parts = ModelParts {
        orchestrator: &manifest.config,
        space: &space,
        serialize: &serialize,
    };
    parts.save(&swarm, &temp)?;
    // The inputs' specialists live in the inputs (a run's checkpoints): copy them in, so that
    // the average outlives the checkpoints it was made from.
    localize_specialists(&temp)?;
    copy_experts(&inputs[0], &temp)?;
    // The namespaces' own files (readers, added heads) are not averaged: every input has the
    // same ones.
    for (relative, _) in namespace_files(&space) {
        let (source, target) = (inputs[0].join(&relative), temp.join(&relative));
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| TrainError::io(parent, e))?;
        }
        std::fs::copy(&source, &target).map_err(|e| TrainError::io(&source, e))?;
    }
    if out.exists() {
        return Err(TrainError::Run {
            path: out.to_path_buf(),
            reason: "already exists; averaging never overwrites a model".into(),
        });
    }
    std::fs::rename(&temp, out).map_err(|e| TrainError::io(out, e))?;
    Ok(())
}

/// Copies the domain experts of the model directory `from` (not averaged: every input has the
/// same ones), their list and their routing, into `to`.
fn copy_experts(from: &Path, to: &Path) -> Result<(), TrainError> {
    let experts = ExpertList::load(from)?;
    if experts.experts.is_empty() {
        return Ok(());
    }
    experts.save(to)?;
    for expert in &experts.experts {
        ModelDir::open(&from.join(&expert.dir))?.copy_to(&to.join(&expert.dir))?;
    }
    if let Some(routing) = &experts.routing {
        let (source, target) = (from.join(&routing.path), to.join(&routing.path));
        std::fs::copy(&source, &target).map_err(|e| TrainError::io(&source, e))?;
    }
    Ok(())
}

/// The files a label space names beside the weights, with their checksums: each namespace's
/// n-gram reader and a fine-tuned namespace's head (and its reader).
fn namespace_files(space: &LabelSpace) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for namespace in space.cta.iter().chain(&space.cpa) {
        if let Some(head) = &namespace.head {
            files.push((head.path.clone(), head.sha256.clone()));
            if let Some(ngrams) = &head.ngrams {
                files.push((ngrams.path.clone(), ngrams.sha256.clone()));
            }
        }
        if let Some(reader) = &namespace.reader {
            files.push((reader.path.clone(), reader.sha256.clone()));
        }
    }
    files
}

/// The first model directory of an average, which every other must match.
struct Averaged<'a> {
    dir: &'a Path,
    manifest: &'a SwarmManifest,
    serialize: &'a SerializeSettings,
    experts: &'a [(ExpertRef, Vec<u8>)],
}

impl Averaged<'_> {
    /// Refuses `dir` (its `manifest` and `serialize`) unless its model differs from the first
    /// in its weights alone.
    fn check_same(
        &self,
        dir: &Path,
        manifest: &SwarmManifest,
        serialize: &SerializeSettings,
    ) -> Result<(), TrainError> {
        let differs = |reason: &str| TrainError::Run {
            path: dir.to_path_buf(),
            reason: format!("cannot be averaged with {}: {reason}", self.dir.display()),
        };
        let first = self.manifest;
        if manifest.config != first.config {
            return Err(differs("another model configuration"));
        }
        if manifest.cta_labels != first.cta_labels || manifest.cpa_labels != first.cpa_labels {
            return Err(differs("other labels"));
        }
        if serialize != self.serialize {
            return Err(differs("other serialization settings"));
        }
        let checksums = |m: &SwarmManifest| -> Vec<(String, String)> {
            m.specialists
                .iter()
                .map(|s| (s.name.clone(), s.checkpoint.sha256.clone()))
                .collect()
        };
        if checksums(manifest) != checksums(first) {
            return Err(differs("other specialists"));
        }
        if expert_manifests(dir)? != self.experts {
            return Err(differs("other domain experts"));
        }
        let routing = |dir: &Path| -> Result<_, TrainError> { Ok(ExpertList::load(dir)?.routing) };
        if routing(dir)? != routing(self.dir)? {
            return Err(differs("another routing of the domain experts"));
        }
        Ok(())
    }
}

/// The list of a model directory's domain experts with each one's manifest (which holds the
/// checksum of every file it reads): equal for two directories with the same experts.
fn expert_manifests(dir: &Path) -> Result<Vec<(ExpertRef, Vec<u8>)>, TrainError> {
    ExpertList::load(dir)?
        .experts
        .into_iter()
        .map(|expert| {
            let path = dir.join(&expert.dir).join(MANIFEST_FILE);
            let manifest = std::fs::read(&path).map_err(|e| TrainError::io(&path, e))?;
            Ok((expert, manifest))
        })
        .collect()
}

/// Averages the last `epochs` epoch-end checkpoints of the run at `run` (checkpoints written
/// in the middle of an epoch by `checkpoint_every` are left out) into a new model directory
/// `out`, as [`average_model_dirs`] does, and returns the checkpoints' model directories,
/// oldest first.
///
/// The error names the run when it keeps fewer epoch-end checkpoints than asked for (its
/// `keep_last` must be at least `epochs`).
pub fn average_last_epochs(
    run: &Path,
    epochs: usize,
    out: &Path,
) -> Result<Vec<PathBuf>, TrainError> {
    if epochs == 0 {
        return Err(TrainError::Run {
            path: run.to_path_buf(),
            reason: "averaging the last 0 epochs: ask for at least one".into(),
        });
    }
    if !run.join("checkpoints").is_dir() {
        return Err(TrainError::Run {
            path: run.to_path_buf(),
            reason: "not a training run directory (it has no checkpoints/)".into(),
        });
    }
    let mut epoch_ends = Vec::new();
    for dir in RunDir::open(run)?.checkpoints()? {
        if read_state(&dir)?.ends_epoch() {
            epoch_ends.push(dir.join("model"));
        }
    }
    if epoch_ends.len() < epochs {
        return Err(TrainError::Run {
            path: run.to_path_buf(),
            reason: format!(
                "cannot average the last {epochs} epochs: the run keeps {} epoch-end \
                 checkpoints (train with a larger keep_last)",
                epoch_ends.len()
            ),
        });
    }
    let last = epoch_ends.split_off(epoch_ends.len() - epochs);
    average_model_dirs(&last, out)?;
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::nn::{Linear, LinearConfig};
    use burn::tensor::Device;

    fn values(linear: &Linear) -> Vec<f32> {
        parameters(linear, 1)
            .unwrap()
            .into_iter()
            .flat_map(|(_, v)| v)
            .collect()
    }

    #[test]
    fn the_mean_of_two_linears_is_their_element_wise_mean() {
        let device = Device::flex();
        let a = LinearConfig::new(3, 2).init(&device);
        let b = LinearConfig::new(3, 2).init(&device);
        let (va, vb) = (values(&a), values(&b));
        assert_ne!(va, vb);
        let mean = average_modules(vec![a, b]).unwrap();
        for ((m, x), y) in values(&mean).iter().zip(&va).zip(&vb) {
            assert!((m - (x + y) / 2.0).abs() < 1e-6, "{m} vs {x}, {y}");
        }
    }

    #[test]
    fn equal_parameters_are_kept_bit_for_bit() {
        let device = Device::flex();
        let a = LinearConfig::new(5, 7).init(&device);
        let copies = vec![a.clone(), a.clone(), a.clone()];
        assert_eq!(values(&average_modules(copies).unwrap()), values(&a));
    }

    #[test]
    fn averaging_epochs_of_no_run_or_zero_epochs_is_an_error_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let error = average_last_epochs(dir.path(), 2, &out)
            .unwrap_err()
            .to_string();
        assert!(error.contains("no checkpoints/"), "{error}");
        assert!(error.contains(&dir.path().display().to_string()), "{error}");
        std::fs::create_dir(dir.path().join("checkpoints")).unwrap();
        let error = average_last_epochs(dir.path(), 2, &out)
            .unwrap_err()
            .to_string();
        assert!(error.contains("keeps 0 epoch-end checkpoints"), "{error}");
        let error = average_last_epochs(dir.path(), 0, &out)
            .unwrap_err()
            .to_string();
        assert!(error.contains("at least one"), "{error}");
        assert!(!out.exists());
    }

    #[test]
    fn different_shapes_are_an_error_naming_the_parameter() {
        let device = Device::flex();
        let a = LinearConfig::new(3, 2).init(&device);
        let b = LinearConfig::new(4, 2).init(&device);
        let error = average_modules(vec![a, b]).unwrap_err();
        assert!(error.contains("parameter 0 of model 2"), "{error}");
    }
}
