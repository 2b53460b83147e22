//! `calibrate`: per namespace (CTA, or CPA with `--task cpa`), the probability below which the
//! model gives no label, chosen on labelled dev tables and stored in the model directory's
//! `labels.json`; and, as given, the priors a namespace's probabilities take in (the
//! label-name prior of [`colswarm_model::label_names`], the header memory of
//! [`colswarm_model::header_memory`], a relation's view of the object column's type) and the
//! router's threshold for the state specialists ([`set_router_threshold`]). The priors are
//! stored first, so the thresholds are chosen on the probabilities they give.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use colswarm_eval::{
    AbstentionPoint, DataSpec, EvalOptions, ThresholdRule, abstention_curve, choose_threshold,
    evaluate,
};
use colswarm_model::{
    ExpertList, HeaderMemory, LABELS_FILE, Model, ModelDir, Namespace, ROUTING_FILE, SpecialistUse,
    SubjectLabel, Task, mix_namespace,
};
use colswarm_swarm::manifest::{MANIFEST_FILE, set_router_threshold};
use serde::Serialize;

use crate::device_arg::DeviceArg;
use crate::evaluate::load_model;

#[derive(Args, Debug)]
pub(crate) struct CalibrateArgs {
    /// Model directory.
    #[arg(long)]
    model: PathBuf,
    /// Labelled dev tables NAME=FORMAT:PATH[#SPLIT], NAME being one of the model's namespaces of
    /// `--task` (repeatable: one threshold per namespace). Use tables the model was not trained
    /// on.
    #[arg(long = "dev", required_unless_present_any = ["set", "label_names", "label_names_skip_subject", "subject_label", "header_memory", "header_memory_from", "type_view", "router_threshold", "open_below", "mix_weight"])]
    dev: Vec<String>,
    /// Store this threshold for a namespace of `--task` as given, NAMESPACE=THRESHOLD
    /// (repeatable): one chosen elsewhere, such as on dev with a model of the same recipe
    /// trained without it; `NAMESPACE=none` removes the namespace's threshold.
    #[arg(long = "set", value_name = "NAMESPACE=THRESHOLD")]
    set: Vec<String>,
    /// Whose abstention `--dev` and `--set` calibrate: `cta`, the types (default), or `cpa`,
    /// the relations (a relation namespace then answers "none fits" below its threshold).
    #[arg(long, default_value = "cta")]
    task: Task,
    /// Store the weight of the label-name prior for a namespace, [TASK:]NAMESPACE=WEIGHT
    /// (repeatable; TASK `cta` or `cpa`, both without it): a column's header raises the labels
    /// whose names share its words, by WEIGHT times the share (Jaccard) of words in common.
    /// Choose the weight by cross-validation (docs/TRAINING.md); `=none` removes it.
    #[arg(long = "label-names", value_name = "[TASK:]NAMESPACE=WEIGHT")]
    label_names: Vec<String>,
    /// Leave each table's subject column out of a CTA namespace's label-name prior,
    /// NAMESPACE=yes|no (repeatable): for a label set that gives subject columns a label of
    /// their own, as T2D's `rdf-schema#label`, which their headers never spell.
    #[arg(long = "label-names-skip-subject", value_name = "NAMESPACE=yes|no")]
    label_names_skip_subject: Vec<String>,
    /// Let a CTA namespace's label for subject columns find each table's subject column,
    /// NAMESPACE=LABEL (T2D's `http://www.w3.org/2000/01/rdf-schema#label`): where another
    /// column is more probable of LABEL than the cell rule's column by more than
    /// `--subject-margin`, relations start from it and the label-name prior leaves it out.
    /// A table whose subject column is named (`annotate --subject-column`) keeps it;
    /// `NAMESPACE=none` removes the label.
    #[arg(long = "subject-label", value_name = "NAMESPACE=LABEL")]
    subject_label: Vec<String>,
    /// With `--subject-label`: how much more probable of the label another column must be
    /// (in [-1, 1]; a negative margin always takes the most probable column).
    #[arg(long, default_value_t = 0.7, allow_negative_numbers = true)]
    subject_margin: f32,
    /// Store the weight of the header-memory prior for a namespace of `--task`,
    /// NAMESPACE=WEIGHT (repeatable): a column's header raises each label by WEIGHT times the
    /// share of the header's training columns (CPA: object columns) that had it. The counts
    /// come from `--header-memory-from`, or stay as stored; `=none` removes the memory.
    #[arg(long = "header-memory", value_name = "NAMESPACE=WEIGHT")]
    header_memory: Vec<String>,
    /// The tables the header memory counts, NAME=FORMAT:PATH[#SPLIT], NAME being a namespace
    /// of `--task` (repeatable): the model's own training tables, never those it is scored on.
    #[arg(long = "header-memory-from", value_name = "SPEC")]
    header_memory_from: Vec<String>,
    /// Mix a relation namespace with the CTA namespace of the same name, NAMESPACE=M
    /// (repeatable; M in [0, 1]): the relation's log-probabilities become (1 − M)·log p_cpa +
    /// M·log p_cta of the object column, for label sets whose column types are the relations
    /// (T2D's properties). `=none` removes it.
    #[arg(long = "type-view", value_name = "NAMESPACE=M")]
    type_view: Vec<String>,
    /// Store the router's threshold τ: a state specialist opens on a table where its gate
    /// exceeds τ; 1 closes them all (the shipped model's setting: they change no answer).
    /// The domain experts open by their own rule (`add-specialist --open-below`).
    #[arg(long, value_name = "TAU")]
    router_threshold: Option<f64>,
    /// Store where a domain expert opens, EXPERT=PROBABILITY (repeatable): on a table where
    /// the model's least confident answer in the expert's namespaces is below PROBABILITY;
    /// `EXPERT=always` opens it on every table. As `add-specialist --open-below` sets it.
    #[arg(long = "open-below", value_name = "EXPERT=PROBABILITY")]
    open_below: Vec<String>,
    /// Store a domain expert's weight θ in the logit mix of a namespace,
    /// EXPERT@[TASK:]NAMESPACE=WEIGHT (repeatable; TASK `cta` or `cpa`, both without it):
    /// where the expert reads, a label's logit becomes (x₀ + θ·x)/(1 + θ), so 0 leaves the
    /// namespace to the primary and 1 (every expert's weight until set) is the plain average.
    /// Stored with the experts' routing; the gates keep their rules (or their training).
    #[arg(long = "mix-weight", value_name = "EXPERT@[TASK:]NAMESPACE=WEIGHT")]
    mix_weight: Vec<String>,
    /// Choose the lowest threshold whose precision on dev reaches this (default: the threshold
    /// with the best micro-F1, an abstention counting as a miss).
    #[arg(long)]
    min_precision: Option<f64>,
    /// Write the calibrated model to this new directory (a copy of --model) instead of
    /// changing --model's `labels.json` in place.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the whole precision / coverage curve (thresholds 0.00 to 1.00).
    #[arg(long)]
    curve: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[arg(long, default_value_t = 16, value_parser = crate::at_least_one)]
    batch_size: usize,
    #[command(flatten)]
    device: DeviceArg,
}

/// What `calibrate` found for one namespace.
#[derive(Serialize)]
struct Calibration {
    namespace: String,
    never_abstaining: AbstentionPoint,
    chosen: AbstentionPoint,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    curve: Vec<AbstentionPoint>,
}

pub(crate) fn cmd_calibrate(args: CalibrateArgs) -> Result<()> {
    if let Some(p) = args.min_precision
        && !(0.0..=1.0).contains(&p)
    {
        bail!("--min-precision {p} is not a precision in [0, 1]");
    }
    let rule = args
        .min_precision
        .map_or(ThresholdRule::BestF1, ThresholdRule::MinPrecision);
    let mut model = load_model(&args.model, args.device)?;
    if args.router_threshold.is_some() && model.swarm.specialists.is_empty() {
        bail!(
            "--router-threshold: {} has no state specialist, so a threshold would open none (its \
             answering specialists open by their own gates: --open-below)",
            args.model.join(MANIFEST_FILE).display()
        );
    }
    let open_below = parse_open_below(&args, &model)?;
    let mix_weights = parse_mix_weights(&args, &model)?;
    // The priors first: the thresholds are chosen on the probabilities they give.
    store_priors(&args, &mut model)?;
    let found = calibrate_on_dev(&args, &model, rule)?;
    store_thresholds(&args, &mut model, &found)?;
    let dir = match &args.out {
        Some(out) => {
            copy_model_dir(&args.model, out)?;
            out.clone()
        }
        None => args.model.clone(),
    };
    // `--router-threshold` alone changes the manifest only.
    let labels_changed = !(args.dev.is_empty()
        && args.set.is_empty()
        && args.label_names.is_empty()
        && args.label_names_skip_subject.is_empty()
        && args.subject_label.is_empty()
        && args.header_memory.is_empty()
        && args.header_memory_from.is_empty()
        && args.type_view.is_empty());
    if labels_changed {
        model.space.save(&dir.join(LABELS_FILE))?;
    }
    set_open_below(&dir, &open_below)?;
    store_routing(&mut model, &open_below, &mix_weights, &dir)?;
    if let Some(threshold) = args.router_threshold {
        set_router_threshold(&dir, threshold)
            .with_context(|| format!("--router-threshold {threshold}"))?;
    }
    if args.json {
        out!("{}", serde_json::to_string(&found)?);
        return Ok(());
    }
    report(&args, &model, &found, &dir, labels_changed)
}

/// The threshold `rule` chooses on each `--dev` set, with its curve.
fn calibrate_on_dev(
    args: &CalibrateArgs,
    model: &Model,
    rule: ThresholdRule,
) -> Result<Vec<Calibration>> {
    let mut found = Vec::new();
    for spec in &args.dev {
        let spec: DataSpec = spec.parse()?;
        let Some(namespace) = model.space.namespace(args.task, &spec.namespace) else {
            bail!(
                "--dev {spec}: the model has no {} namespace `{}` (it has: {})",
                task_name(args.task),
                spec.namespace,
                namespaces(model.space.list(args.task))
            );
        };
        let data = spec.load()?;
        let options = EvalOptions {
            task: args.task,
            namespace: Some(spec.namespace.clone()),
            batch_size: args.batch_size,
            specialists: SpecialistUse::Router,
            progress: !args.json,
            probabilities: true,
            own_subject: false,
        };
        let report = evaluate(model, &data.tables, spec.format, &options)?;
        if report.targets.is_empty() {
            bail!(
                "--dev {spec}: no labelled {} target to calibrate on",
                args.task
            );
        }
        let curve = abstention_curve(&report.targets, namespace);
        let chosen = choose_threshold(&curve, rule)
            .context("the curve has a point per threshold")?
            .clone();
        found.push(Calibration {
            namespace: spec.namespace.clone(),
            never_abstaining: curve[0].clone(),
            chosen,
            curve: if args.curve { curve } else { Vec::new() },
        });
    }
    Ok(found)
}

/// Writes the chosen thresholds and every `--set` into `model`'s label space.
fn store_thresholds(args: &CalibrateArgs, model: &mut Model, found: &[Calibration]) -> Result<()> {
    let calibrated = match args.task {
        Task::Cta => &mut model.space.cta,
        Task::Cpa => &mut model.space.cpa,
    };
    for c in found {
        if let Some(n) = calibrated.iter_mut().find(|n| n.name == c.namespace) {
            n.abstain_below = Some(c.chosen.threshold);
        }
    }
    for given in &args.set {
        let (name, value) = parse_unit("--set", "THRESHOLD", given)?;
        let kind = task_name(args.task);
        task_namespace(calibrated, kind, "--set", given, &name)?.abstain_below = value;
    }
    Ok(())
}

/// Writes every `--label-names`, `--label-names-skip-subject`, `--header-memory` (with the
/// counts of `--header-memory-from`) and `--type-view` into `model`'s label space.
fn store_priors(args: &CalibrateArgs, model: &mut Model) -> Result<()> {
    for given in &args.label_names {
        let (task, name, weight) = parse_weight("--label-names", given)?;
        let mut found = false;
        let (cta, cpa) = (&mut model.space.cta, &mut model.space.cpa);
        let lists = match task {
            Some(Task::Cta) => vec![cta],
            Some(Task::Cpa) => vec![cpa],
            None => vec![cta, cpa],
        };
        for n in lists.into_iter().flatten() {
            if n.name == name {
                n.label_name_weight = weight;
                found = true;
            }
        }
        if !found {
            let known = namespaces(model.space.cta.iter().chain(&model.space.cpa));
            bail!("--label-names {given}: the model has no namespace `{name}` (it has: {known})");
        }
    }
    for given in &args.label_names_skip_subject {
        let (name, skip) = match given.split_once('=') {
            Some((name, "yes")) => (name, true),
            Some((name, "no")) => (name, false),
            _ => {
                bail!("--label-names-skip-subject {given}: expected NAMESPACE=yes or NAMESPACE=no")
            }
        };
        let flag = "--label-names-skip-subject";
        let cta = &mut model.space.cta;
        task_namespace(cta, "CTA", flag, given, name)?.label_name_skip_subject = skip;
    }
    store_subject_label(args, model)?;
    store_header_memory(args, model)?;
    for given in &args.type_view {
        let (name, weight) = parse_unit("--type-view", "M", given)?;
        if weight.is_some() && model.space.namespace(Task::Cta, &name).is_none() {
            let known = namespaces(&model.space.cta);
            bail!(
                "--type-view {given}: the model has no CTA namespace `{name}` to read the object column's type from (it has: {known})"
            );
        }
        let cpa = &mut model.space.cpa;
        task_namespace(cpa, "CPA", "--type-view", given, &name)?.type_view_weight = weight;
    }
    Ok(())
}

/// Every `--subject-label`, with `--subject-margin`.
fn store_subject_label(args: &CalibrateArgs, model: &mut Model) -> Result<()> {
    let margin = args.subject_margin;
    if !(-1.0..=1.0).contains(&margin) {
        bail!("--subject-margin {margin} is not in [-1, 1]");
    }
    for given in &args.subject_label {
        let Some((name, label)) = given.split_once('=') else {
            bail!("--subject-label {given}: expected NAMESPACE=LABEL or NAMESPACE=none");
        };
        let cta = &mut model.space.cta;
        let namespace = task_namespace(cta, "CTA", "--subject-label", given, name)?;
        namespace.subject_label = if label == "none" {
            None
        } else if namespace.labels.iter().any(|l| l == label) {
            Some(SubjectLabel {
                label: label.to_string(),
                margin,
            })
        } else {
            bail!(
                "--subject-label {given}: CTA namespace `{name}` has no label `{label}` (it has {} labels)",
                namespace.labels.len()
            );
        };
    }
    Ok(())
}

/// Every `--open-below`, checked against `model`'s experts: (expert, its rule).
fn parse_open_below(args: &CalibrateArgs, model: &Model) -> Result<Vec<(String, Option<f32>)>> {
    args.open_below
        .iter()
        .map(|given| {
            let Some((name, value)) = given.split_once('=') else {
                bail!("--open-below {given}: expected EXPERT=PROBABILITY or EXPERT=always");
            };
            let rule = match value {
                "always" => None,
                _ => match value.parse::<f32>() {
                    Ok(p) if (0.0..=1.0).contains(&p) => Some(p),
                    _ => {
                        bail!("--open-below {given}: expected a probability in [0, 1] or `always`")
                    }
                },
            };
            if !model.experts.iter().any(|e| e.name == name) {
                let known: Vec<&str> = model.experts.iter().map(|e| e.name.as_str()).collect();
                let known = if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                };
                bail!("--open-below {given}: the model has no expert `{name}` (it has: {known})");
            }
            Ok((name.to_string(), rule))
        })
        .collect()
}

/// Every `--mix-weight`, checked against `model`: (mixed namespace, expert, θ).
fn parse_mix_weights(args: &CalibrateArgs, model: &Model) -> Result<Vec<(usize, usize, f32)>> {
    let mut weights = Vec::new();
    for given in &args.mix_weight {
        let (target, weight) = given.split_once('=').unwrap_or((given, ""));
        let Some((expert, namespace)) = target.split_once('@') else {
            bail!("--mix-weight {given}: expected EXPERT@[TASK:]NAMESPACE=WEIGHT");
        };
        let Some(e) = model.experts.iter().position(|e| e.name == expert) else {
            let known: Vec<&str> = model.experts.iter().map(|e| e.name.as_str()).collect();
            bail!(
                "--mix-weight {given}: the model has no expert `{expert}` (it has: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        };
        let theta = match weight.parse::<f32>() {
            Ok(w) if w.is_finite() && w >= 0.0 => w,
            _ => bail!("--mix-weight {given}: the weight must be a number ≥ 0"),
        };
        let (tasks, name) = match namespace.split_once(':') {
            Some(("cta", name)) => (vec![Task::Cta], name),
            Some(("cpa", name)) => (vec![Task::Cpa], name),
            Some(_) => bail!("--mix-weight {given}: TASK is `cta` or `cpa`"),
            None => (vec![Task::Cta, Task::Cpa], namespace),
        };
        let found: Vec<usize> = (tasks.iter())
            .filter_map(|&task| mix_namespace(&model.space, task, name))
            .collect();
        if found.is_empty() {
            bail!(
                "--mix-weight {given}: the model mixes no namespace `{namespace}` (CTA: {}; CPA: {})",
                namespaces(&model.space.cta),
                namespaces(&model.space.cpa)
            );
        }
        weights.extend(found.into_iter().map(|n| (n, e, theta)));
    }
    Ok(weights)
}

/// `weights` (from `--mix-weight`) into the experts' routing, and every `--open-below` into
/// its gates where it is stored (without a stored routing the gates follow the rules already),
/// then the routing into `dir` when either changed it.
fn store_routing(
    model: &mut Model,
    open_below: &[(String, Option<f32>)],
    weights: &[(usize, usize, f32)],
    dir: &Path,
) -> Result<()> {
    let stored = ExpertList::load(dir)?.routing.is_some();
    if weights.is_empty() && (open_below.is_empty() || !stored) {
        return Ok(());
    }
    let experts: Vec<String> = model.experts.iter().map(|e| e.name.clone()).collect();
    let Some(routing) = model.expert_routing.as_mut() else {
        bail!("--mix-weight: the model has no experts");
    };
    for (name, rule) in open_below {
        if let Some(i) = experts.iter().position(|e| e == name) {
            routing.set_rule(i, *rule);
        }
    }
    for &(namespace, expert, theta) in weights {
        routing.set_mix_weight(namespace, expert, theta);
    }
    ModelDir::open(dir)?.set_expert_routing(routing)?;
    Ok(())
}

/// Writes `rules` into `dir`'s list of experts.
fn set_open_below(dir: &Path, rules: &[(String, Option<f32>)]) -> Result<()> {
    if rules.is_empty() {
        return Ok(());
    }
    let mut list = ExpertList::load(dir)?;
    for (name, rule) in rules {
        if let Some(expert) = list.experts.iter_mut().find(|e| &e.name == name) {
            expert.open_below = *rule;
        }
    }
    list.save(dir)?;
    Ok(())
}

/// `--header-memory-from` counts, then `--header-memory` weights.
fn store_header_memory(args: &CalibrateArgs, model: &mut Model) -> Result<()> {
    let kind = task_name(args.task);
    let mut counted = Vec::new();
    for given in &args.header_memory_from {
        let spec: DataSpec = given.parse()?;
        let data = spec.load()?;
        let list = match args.task {
            Task::Cta => &mut model.space.cta,
            Task::Cpa => &mut model.space.cpa,
        };
        let flag = "--header-memory-from";
        let n = task_namespace(list, kind, flag, given, &spec.namespace)?;
        // Its weight comes from --header-memory, required below.
        let memory = HeaderMemory::count(&data.tables, args.task, &n.labels, 0.0);
        if memory.is_empty() {
            bail!(
                "{flag} {given}: no header with a label of `{}` to remember",
                n.name
            );
        }
        n.header_memory = Some(memory);
        counted.push(spec.namespace);
    }
    for given in &args.header_memory {
        let (task, name, weight) = parse_weight("--header-memory", given)?;
        if task.is_some_and(|t| t != args.task) {
            bail!(
                "--header-memory {given}: the memory is of --task {}",
                args.task
            );
        }
        let list = match args.task {
            Task::Cta => &mut model.space.cta,
            Task::Cpa => &mut model.space.cpa,
        };
        let n = task_namespace(list, kind, "--header-memory", given, &name)?;
        match (weight, n.header_memory.as_mut()) {
            (None, _) => n.header_memory = None,
            (Some(w), Some(memory)) => memory.weight = w,
            (Some(_), None) => bail!(
                "--header-memory {given}: `{name}` remembers no headers yet; give its training tables with --header-memory-from {name}=FORMAT:PATH"
            ),
        }
    }
    if let Some(name) = counted.iter().find(|name| {
        !args
            .header_memory
            .iter()
            .any(|g| g.split_once('=').is_some_and(|(n, _)| n == name.as_str()))
    }) {
        bail!("--header-memory-from {name}=…: give its weight with --header-memory {name}=WEIGHT");
    }
    Ok(())
}

/// Prints what was chosen and what the model now stores.
fn report(
    args: &CalibrateArgs,
    model: &Model,
    found: &[Calibration],
    dir: &Path,
    labels_changed: bool,
) -> Result<()> {
    for c in found {
        let (a, b) = (&c.never_abstaining, &c.chosen);
        out!(
            "{}: {} targets; never abstaining: precision {:.4}, micro-F1 {:.4}",
            c.namespace,
            a.targets,
            a.precision,
            a.micro_f1
        );
        out!(
            "{}: abstains below {:.2}: coverage {:.4}, precision {:.4}, micro-F1 {:.4}",
            c.namespace,
            b.threshold,
            b.coverage,
            b.precision,
            b.micro_f1
        );
        if !c.curve.is_empty() {
            out!("threshold  coverage  precision  micro-F1");
            for p in &c.curve {
                out!(
                    "{:>9.2}  {:>8.4}  {:>9.4}  {:>8.4}",
                    p.threshold,
                    p.coverage,
                    p.precision,
                    p.micro_f1
                );
            }
        }
    }
    for (task, list) in [("CTA", &model.space.cta), ("CPA", &model.space.cpa)] {
        for n in list.iter() {
            match n.abstain_below {
                Some(t) => out!("{} ({task}): abstains below {t:.2}", n.name),
                None => out!("{} ({task}): never abstains", n.name),
            }
        }
    }
    for (task, list) in [("CTA", &model.space.cta), ("CPA", &model.space.cpa)] {
        for n in list.iter() {
            if let Some(w) = n.label_name_weight {
                let scope = if n.label_name_skip_subject {
                    ", not on the subject column"
                } else {
                    ""
                };
                out!("{} ({task}): label-name prior weight {w}{scope}", n.name);
            }
            if let Some(subject) = &n.subject_label {
                let (label, margin) = (&subject.label, subject.margin);
                out!(
                    "{} ({task}): finds subject columns by `{label}`, margin {margin}",
                    n.name
                );
            }
            if let Some(memory) = &n.header_memory {
                let (w, headers) = (memory.weight, memory.len());
                out!(
                    "{} ({task}): header memory of {headers} headers, weight {w}",
                    n.name
                );
            }
            if let Some(m) = n.type_view_weight {
                out!("{} ({task}): the object column's type weighs {m}", n.name);
            }
        }
    }
    if let Some(threshold) = args.router_threshold {
        out!(
            "router: a state specialist opens where its gate exceeds {threshold} (stored in {})",
            dir.join(MANIFEST_FILE).display()
        );
    }
    if !args.open_below.is_empty() {
        for expert in ExpertList::load(dir)?.experts {
            match expert.open_below {
                Some(p) => out!("{}: opens below {p}", expert.name),
                None => out!("{}: opens on every table", expert.name),
            }
        }
    }
    if !args.mix_weight.is_empty() {
        for given in &args.mix_weight {
            out!(
                "mix weight {given} (stored in {})",
                dir.join(ROUTING_FILE).display()
            );
        }
    }
    if labels_changed {
        out!("thresholds stored in {}", dir.join(LABELS_FILE).display());
    }
    Ok(())
}

/// The namespace `name` of `list` (the `kind` head's) that `flag given` names, or an error
/// listing those there are.
fn task_namespace<'a>(
    list: &'a mut [Namespace],
    kind: &str,
    flag: &str,
    given: &str,
    name: &str,
) -> Result<&'a mut Namespace> {
    let known = namespaces(list.iter());
    list.iter_mut().find(|n| n.name == name).with_context(|| {
        format!("{flag} {given}: the model has no {kind} namespace `{name}` (it has: {known})")
    })
}

/// `CTA` or `CPA`, as messages name the heads.
fn task_name(task: Task) -> &'static str {
    match task {
        Task::Cta => "CTA",
        Task::Cpa => "CPA",
    }
}

fn namespaces<'a>(list: impl IntoIterator<Item = &'a Namespace>) -> String {
    let mut names: Vec<&str> = list.into_iter().map(|n| n.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.join(", ")
}

/// `[TASK:]NAMESPACE=WEIGHT` (finite, at least 0) or `[TASK:]NAMESPACE=none`, given to `flag`.
fn parse_weight(flag: &str, given: &str) -> Result<(Option<Task>, String, Option<f32>)> {
    let Some((target, value)) = given.split_once('=') else {
        bail!("{flag} {given}: expected [TASK:]NAMESPACE=WEIGHT");
    };
    let (task, name) = match target.split_once(':') {
        Some((task, name)) => {
            let task = task
                .parse::<Task>()
                .map_err(|e| anyhow::anyhow!("{flag} {given}: {e}"))?;
            (Some(task), name.to_string())
        }
        None => (None, target.to_string()),
    };
    if value == "none" {
        return Ok((task, name, None));
    }
    match value.parse::<f32>() {
        Ok(w) if w.is_finite() && w >= 0.0 => Ok((task, name, Some(w))),
        _ => bail!("{flag} {given}: the weight must be a finite number ≥ 0 or `none`"),
    }
}

/// `NAMESPACE=VALUE` (VALUE in [0, 1], named `placeholder` in messages) or `NAMESPACE=none`,
/// given to `flag`.
fn parse_unit(flag: &str, placeholder: &str, given: &str) -> Result<(String, Option<f32>)> {
    let expected = || {
        anyhow::anyhow!(
            "{flag} {given}: expected NAMESPACE={placeholder} with {placeholder} in [0, 1], or NAMESPACE=none"
        )
    };
    let (name, value) = given.split_once('=').ok_or_else(expected)?;
    if value == "none" {
        return Ok((name.to_string(), None));
    }
    match value.parse::<f32>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok((name.to_string(), Some(v))),
        _ => Err(expected()),
    }
}

/// Copies a model directory (files and subdirectories) to a new one.
pub(crate) fn copy_model_dir(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        bail!("--out {} exists: name a new directory", to.display());
    }
    ModelDir::open(from)?
        .copy_to(to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}
