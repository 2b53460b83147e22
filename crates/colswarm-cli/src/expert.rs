//! `add-expert`: puts a model trained on one benchmark's tables alone beside a model's primary,
//! as a domain expert that the experts' router opens and whose logits are mixed into the
//! primary's ([`colswarm_model::expert_routing`]).

use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use colswarm_model::{Expert, ExpertList, ExpertRef, Model, Task};
use colswarm_swarm::manifest::MANIFEST_FILE;
use serde_json::Value;

use crate::calibrate::copy_model_dir;
use crate::device_arg::DeviceArg;
use crate::evaluate::load_model;

#[derive(Args, Debug)]
pub(crate) struct AddExpertArgs {
    /// Model directory the expert joins.
    #[arg(long)]
    model: PathBuf,
    /// The expert, NAME=DIR: a model directory trained without specialists, reading tables as
    /// the model does (the same serialization and word vectors; its n-grams may differ, e.g.
    /// `--neighbour-ngrams`), e.g. the same recipe trained on one benchmark alone. It is copied
    /// into the model's `experts/NAME/`.
    #[arg(long, value_name = "NAME=DIR")]
    expert: String,
    /// Write the model with its new expert to this new directory (a copy of --model) instead
    /// of adding it to --model in place.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The rule the router's gate for the expert starts from (until `train-router` trains it):
    /// it opens on a table where the model's least confident answer in the expert's
    /// namespaces (the best label's probability, over the table's columns and relations) is
    /// below this probability; without it, on every table.
    #[arg(long, value_name = "PROBABILITY")]
    open_below: Option<f32>,
    #[command(flatten)]
    device: DeviceArg,
}

pub(crate) fn cmd_add_expert(args: AddExpertArgs) -> Result<()> {
    let Some((name, from)) = args.expert.split_once('=') else {
        bail!("--expert {}: expected NAME=DIR", args.expert);
    };
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || !name.chars().all(valid) {
        bail!("--expert {name:?}: a name is letters, digits, '-' and '_' (it names a directory)");
    }
    let from = Path::new(from);
    let primary = load_model(&args.model, args.device)?;
    if primary.experts.iter().any(|e| e.name == name) {
        bail!(
            "{} already has an expert named {name:?}",
            args.model.display()
        );
    }
    let expert = load_model(from, args.device)?;
    // Refused here, before anything is written, if it cannot stand beside this primary.
    let expert = Expert::new(name, expert, args.open_below, &primary, from)?;

    let dir = match &args.out {
        Some(out) => {
            copy_model_dir(&args.model, out)?;
            out.clone()
        }
        None => args.model.clone(),
    };
    let relative = format!("experts/{name}");
    let target = dir.join(&relative);
    if target.exists() {
        bail!(
            "{} exists: remove it or choose another name",
            target.display()
        );
    }
    // Copied beside its final place and renamed into it: a failed copy leaves no half expert.
    let staging = dir.join(format!("experts/.{name}.partial"));
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .with_context(|| format!("removing {}", staging.display()))?;
    }
    copy_model_dir(from, &staging)?;
    share_word_vectors(&dir, &staging)?;
    std::fs::rename(&staging, &target)
        .with_context(|| format!("moving {} to {}", staging.display(), target.display()))?;
    let mut list = ExpertList::load(&dir)?;
    list.experts.push(ExpertRef {
        name: name.to_string(),
        dir: relative,
        open_below: args.open_below,
    });
    // A trained routing gains a gate for the expert (its rule) and keeps the others'.
    if list.routing.is_some() {
        let mut grown = primary;
        grown.push_expert(expert.clone())?;
        if let Some(routing) = &grown.expert_routing {
            list.routing = Some(routing.save(&dir)?);
        }
    }
    list.save(&dir)?;

    // What was written loads, checksums and all.
    let model = Model::load(&dir, &args.device.open()?)
        .with_context(|| format!("loading {} with its new expert", dir.display()))?;
    println!(
        "expert {name}: knows {} of the model's {} CTA labels and {} of its {} CPA relations; stored in {}",
        expert.shared_labels(Task::Cta),
        model.space.len(Task::Cta),
        expert.shared_labels(Task::Cpa),
        model.space.len(Task::Cpa),
        target.display()
    );
    Ok(())
}

/// When the expert's word vectors are the model's own file (the same SHA-256), drops its copy
/// and points its manifest at the model's: the vectors are the largest file of a model.
fn share_word_vectors(model_dir: &Path, expert_dir: &Path) -> Result<()> {
    let read = |dir: &Path| -> Result<Value> {
        let path = dir.join(MANIFEST_FILE);
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))
    };
    let vectors = |manifest: &Value| -> Option<(String, String)> {
        let file = manifest.get("column_words")?.get("vectors")?;
        Some((
            file.get("path")?.as_str()?.to_string(),
            file.get("sha256")?.as_str()?.to_string(),
        ))
    };
    let mut expert = read(expert_dir)?;
    let (Some((model_path, model_sha)), Some((expert_path, expert_sha))) =
        (vectors(&read(model_dir)?), vectors(&expert))
    else {
        return Ok(());
    };
    if model_sha != expert_sha {
        return Ok(());
    }
    let shared = if Path::new(&model_path).is_absolute() {
        model_path
    } else {
        format!("../../{model_path}")
    };
    // Only a copy inside the expert's own directory is dropped: an expert taken from another
    // model's `experts/` already points outside it (`../../word_vectors.safetensors`), and
    // that path, joined to the staging directory, names the model's own file.
    let inside = Path::new(&expert_path)
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    if inside {
        let copy = expert_dir.join(&expert_path);
        std::fs::remove_file(&copy).with_context(|| format!("removing {}", copy.display()))?;
    }
    expert["column_words"]["vectors"]["path"] = Value::String(shared);
    let path = expert_dir.join(MANIFEST_FILE);
    let json = serde_json::to_vec_pretty(&expert)?;
    std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
