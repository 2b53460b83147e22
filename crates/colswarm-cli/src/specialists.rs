//! The specialists of a model directory:
//!
//! - `add-specialist` (once `add-expert`) puts a whole model, e.g. one trained on one
//!   benchmark's tables alone, beside a model's primary as a specialist that contributes its
//!   answers: the router's gate opens it and its logits are mixed into the primary's
//!   ([`colswarm_model::expert_routing`]). The manifest lists it with the other specialists.
//! - `remove-specialist` takes specialists of either kind out again
//!   ([`ModelDir::remove_specialist`]).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use colswarm_model::{Expert, ExpertRef, Model, ModelDir, Task};

use crate::calibrate::copy_model_dir;
use crate::device_arg::DeviceArg;
use crate::evaluate::load_model;

#[derive(Args, Debug)]
pub(crate) struct AddSpecialistArgs {
    /// Model directory the specialist joins.
    #[arg(long)]
    model: PathBuf,
    /// The specialist, NAME=DIR: a model directory trained without specialists, reading tables
    /// as the model does (the same serialization and word vectors; its n-grams may differ, e.g.
    /// `--neighbour-ngrams`), e.g. the same recipe trained on one benchmark alone. It is copied
    /// into the model's `experts/NAME/`; NAME must differ from every specialist's the model has.
    #[arg(long, alias = "expert", value_name = "NAME=DIR")]
    specialist: String,
    /// Write the model with its new specialist to this new directory (a copy of --model)
    /// instead of adding it to --model in place.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The rule the router's gate for the specialist starts from (until `train-router` trains it):
    /// it opens on a table where the model's least confident answer in the expert's
    /// namespaces (the best label's probability, over the table's columns and relations) is
    /// below this probability; without it, on every table.
    #[arg(long, value_name = "PROBABILITY")]
    open_below: Option<f32>,
    #[command(flatten)]
    device: DeviceArg,
}

pub(crate) fn cmd_add_specialist(args: AddSpecialistArgs) -> Result<()> {
    let Some((name, from)) = args.specialist.split_once('=') else {
        bail!("--specialist {}: expected NAME=DIR", args.specialist);
    };
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || !name.chars().all(valid) {
        bail!(
            "--specialist {name:?}: a name is letters, digits, '-' and '_' (it names a directory)"
        );
    }
    let from = Path::new(from);
    let primary = load_model(&args.model, args.device)?;
    if primary.gate_names().any(|known| known == name) {
        bail!(
            "{} already has a specialist named {name:?}",
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
    ModelDir::open(&dir)?.share_word_vectors_with(&staging)?;
    std::fs::rename(&staging, &target)
        .with_context(|| format!("moving {} to {}", staging.display(), target.display()))?;
    let mut model_dir = ModelDir::open(&dir)?;
    // A trained routing gains a gate for the expert (its rule) and keeps the others'.
    let routing = if model_dir.experts().routing.is_some() {
        let mut grown = primary;
        grown.push_expert(expert.clone());
        grown.expert_routing
    } else {
        None
    };
    let listed = ExpertRef {
        name: name.to_string(),
        dir: relative,
        open_below: args.open_below,
    };
    model_dir.add_expert(listed, routing.as_ref())?;

    // What was written loads, checksums and all.
    let model = Model::load(&dir, &args.device.open()?)
        .with_context(|| format!("loading {} with its new specialist", dir.display()))?;
    println!(
        "specialist {name}: knows {} of the model's {} CTA labels and {} of its {} CPA relations; stored in {}",
        expert.shared_labels(Task::Cta),
        model.space.len(Task::Cta),
        expert.shared_labels(Task::Cpa),
        model.space.len(Task::Cpa),
        target.display()
    );
    Ok(())
}

#[derive(Args, Debug)]
pub(crate) struct RemoveSpecialistArgs {
    /// Model directory to remove specialists from.
    #[arg(long)]
    model: PathBuf,
    /// A specialist to remove, of either kind (as `inspect` lists them); repeat for several.
    #[arg(long, value_name = "NAME", required = true)]
    specialist: Vec<String>,
    /// Write the model without them to this new directory (a copy of --model) instead of
    /// replacing --model.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    device: DeviceArg,
}

/// `path` with `suffix` added to its last component.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

pub(crate) fn cmd_remove_specialist(args: RemoveSpecialistArgs) -> Result<()> {
    let original = ModelDir::open(&args.model)?;
    let known: Vec<&str> = original.manifest().specialist_names().collect();
    for name in &args.specialist {
        if !known.contains(&name.as_str()) {
            bail!(
                "{} has no specialist {name:?} (it has: {})",
                args.model.display(),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        }
    }
    if let Some(out) = &args.out
        && out.exists()
    {
        bail!("--out {} exists: name a new directory", out.display());
    }
    // The edits are made on a copy beside the target, which then takes its place: an
    // interrupted run leaves the model as it was.
    let target = args.out.clone().unwrap_or_else(|| args.model.clone());
    let work = sibling(&target, ".removing");
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    }
    let mut copy = original.copy_to(&work)?;
    let device = args.device.open()?;
    for name in &args.specialist {
        copy.remove_specialist(name, &device)
            .with_context(|| format!("removing specialist {name:?}"))?;
    }
    copy.verify()?;
    Model::load(&work, &device)
        .with_context(|| format!("loading {} without them", work.display()))?;
    if args.out.is_none() {
        let old = sibling(&target, ".replaced");
        if old.exists() {
            std::fs::remove_dir_all(&old).with_context(|| format!("removing {}", old.display()))?;
        }
        std::fs::rename(&target, &old)
            .with_context(|| format!("moving {} to {}", target.display(), old.display()))?;
        std::fs::rename(&work, &target)
            .with_context(|| format!("moving {} to {}", work.display(), target.display()))?;
        std::fs::remove_dir_all(&old).with_context(|| format!("removing {}", old.display()))?;
    } else {
        std::fs::rename(&work, &target)
            .with_context(|| format!("moving {} to {}", work.display(), target.display()))?;
    }
    let left: Vec<String> = ModelDir::open(&target)?
        .manifest()
        .specialist_names()
        .map(str::to_string)
        .collect();
    println!(
        "removed {}; {} now has {}",
        args.specialist.join(", "),
        target.display(),
        if left.is_empty() {
            "no specialist (the primary alone)".to_string()
        } else {
            format!("the specialists {}", left.join(", "))
        }
    );
    Ok(())
}
