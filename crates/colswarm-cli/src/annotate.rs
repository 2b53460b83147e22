//! `annotate`, `embed`, `inspect` and `bench`: everything that runs a trained model goes
//! through the [`Annotator`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use colswarm_model::{
    Annotator, Model, ModelDir, Progress, ReadReport, ReadTableOptions, SpecialistUse,
    SubjectColumn, TableAnnotation, Task, TextEncoding, read_table_from_with_report,
    read_table_with_report, table_files, table_files_and_workbooks, workbook_note,
};
use colswarm_swarm::ColumnNgramsConfig;
use colswarm_swarm::manifest::{MANIFEST_FILE, SwarmManifest, sha256_file};
use colswarm_tables::Table;

use crate::device_arg::DeviceArg;
use crate::evaluate::specialist_use;
use crate::shard::Shard;
use crate::stdout::Stdout;

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub(crate) enum Output {
    Json,
    Csv,
}

#[derive(Args, Debug)]
pub(crate) struct AnnotateArgs {
    /// Model directory.
    #[arg(long)]
    model: PathBuf,
    /// Table files or directories (CSV, TSV, SOTAB .json.gz, parquet); `-` reads a CSV from stdin.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = Output::Json)]
    output: Output,
    /// Labels listed per column.
    #[arg(long, default_value_t = 3)]
    top_k: usize,
    /// Only this CTA namespace (repeatable; default all).
    #[arg(long)]
    namespace: Vec<String>,
    /// Annotate only shard i of n (contiguous blocks of the sorted files; shards concatenate
    /// to the unsharded output).
    #[arg(long)]
    shard: Option<Shard>,
    /// Run the primary alone.
    #[arg(long)]
    no_specialists: bool,
    /// Give every column its best label, even where the model's namespace would abstain (its
    /// best label below the threshold `colswarm calibrate` stored).
    #[arg(long)]
    no_abstain: bool,
    #[command(flatten)]
    reading: ReadingArgs,
    /// The subject column relations start from, in every table: its header (case ignored) or
    /// its 0-based index. A table without it gets the column the model finds, said on stderr.
    #[arg(long, value_name = "HEADER|INDEX")]
    subject_column: Option<SubjectColumn>,
    /// Tables per forward pass (each thread runs its own passes).
    #[arg(long, default_value_t = 16, value_parser = crate::at_least_one)]
    batch_size: usize,
    #[command(flatten)]
    device: DeviceArg,
}

#[derive(Args, Debug)]
pub(crate) struct EmbedArgs {
    /// Model directory.
    #[arg(long)]
    model: PathBuf,
    /// Table files or directories (as `annotate` reads them); `-` reads a CSV from stdin.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    reading: ReadingArgs,
    /// Tables per forward pass.
    #[arg(long, default_value_t = 16, value_parser = crate::at_least_one)]
    batch_size: usize,
    #[command(flatten)]
    device: DeviceArg,
}

#[derive(Args, Debug)]
pub(crate) struct InspectArgs {
    /// A model directory (or its swarm.json) or a .safetensors checkpoint.
    path: PathBuf,
}

#[derive(Args, Debug)]
pub(crate) struct BenchArgs {
    /// Model directory.
    #[arg(long)]
    model: PathBuf,
    /// Table files or directories.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Passes over the inputs.
    #[arg(long, default_value_t = 3, value_parser = crate::at_least_one)]
    repeat: usize,
    #[arg(long, default_value_t = 16, value_parser = crate::at_least_one)]
    batch_size: usize,
    #[command(flatten)]
    device: DeviceArg,
}

/// How `annotate` and `embed` read table files, and what a file that cannot be read does.
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct ReadingArgs {
    /// Repair instead of refusing: invalid UTF-8 becomes U+FFFD, cells over 1 MiB are truncated.
    #[arg(long)]
    lossy: bool,
    /// The text encoding of CSV and TSV files: utf-8; windows-1252 (also read as latin-1,
    /// iso-8859-1 or cp1252), what spreadsheet programs on Windows save as "CSV"; or auto, each
    /// cell as UTF-8 where it is valid UTF-8, else as windows-1252 (a folder of both kinds).
    #[arg(long, default_value_t = TextEncoding::Utf8, value_name = "ENCODING")]
    encoding: TextEncoding,
    /// Skip a table file that cannot be read (its error goes to stderr) and go on with the
    /// rest; the command still fails at the end, saying how many it skipped.
    #[arg(long)]
    keep_going: bool,
}

/// Reads the table files of `annotate`, `embed` and `bench` as [`ReadingArgs`] say, counting
/// the files `--keep-going` skipped and saying on stderr what reading changed: each file whose
/// cells or rows were repaired, then the totals.
struct Reading {
    options: ReadTableOptions,
    keep_going: bool,
    skipped: usize,
    /// Files with a repair (bytes replaced, cells decoded as Windows-1252 or cut, rows padded).
    repaired_files: usize,
    /// Files longer than the row sample.
    sampled_files: usize,
    /// Everything reading changed, over all files.
    changes: ReadReport,
}

impl Reading {
    fn new(args: ReadingArgs) -> Self {
        Reading {
            keep_going: args.keep_going,
            options: ReadTableOptions {
                lossy: args.lossy,
                encoding: args.encoding,
                ..ReadTableOptions::default()
            },
            skipped: 0,
            repaired_files: 0,
            sampled_files: 0,
            changes: ReadReport::default(),
        }
    }

    /// The tables of `inputs`, in order; with `keep_going`, those that could be read.
    fn read_inputs(&mut self, inputs: &[PathBuf]) -> Result<Vec<Table>> {
        let options = self.options;
        let mut tables = Vec::with_capacity(inputs.len());
        for path in inputs {
            // The reader's errors name the file (and the line and column) already.
            let read = if path.as_os_str() == "-" {
                read_table_from_with_report(std::io::stdin().lock(), "stdin", &options)
            } else {
                read_table_with_report(path, &options)
            };
            match read {
                Ok((table, report)) => {
                    self.note(path, report);
                    tables.push(table);
                }
                Err(error) if self.keep_going => {
                    eprintln!("skipped: {error}");
                    self.skipped += 1;
                }
                Err(error) => return Err(error.into()),
            }
        }
        Ok(tables)
    }

    /// Says on stderr what reading `path` repaired; sampling, which every long file gets, is
    /// only counted for [`Reading::finish`].
    fn note(&mut self, path: &Path, report: ReadReport) {
        let repairs = report.repairs();
        if !repairs.is_clean() {
            let name = if path.as_os_str() == "-" {
                "stdin".into()
            } else {
                path.display().to_string()
            };
            eprintln!("{name}: {repairs}");
            self.repaired_files += 1;
        }
        if report.sampled_out_rows > 0 {
            self.sampled_files += 1;
        }
        self.changes.merge(report);
    }

    /// Says what reading changed over all files; then an error if any file was skipped.
    fn finish(&self, total: usize) -> Result<()> {
        if let Some(summary) = self.summary(total) {
            eprintln!("{summary}");
        }
        if self.skipped > 0 {
            anyhow::bail!(
                "{} of {total} table files could not be read and were skipped (each is named above)",
                self.skipped
            );
        }
        Ok(())
    }

    /// One line on what reading changed over `total` files, if it changed anything.
    fn summary(&self, total: usize) -> Option<String> {
        let mut parts = Vec::new();
        if self.repaired_files > 0 {
            let repairs = self.changes.repairs();
            parts.push(format!(
                "{} of {total} table files repaired in reading (each is named above): {repairs}",
                self.repaired_files
            ));
        }
        if self.sampled_files > 0 {
            parts.push(format!(
                "{} of {total} table files longer than {} rows, read from an even sample of \
                 their rows ({} rows left out)",
                self.sampled_files, self.options.sample_rows, self.changes.sampled_out_rows
            ));
        }
        (!parts.is_empty()).then(|| format!("read: {}", parts.join("; ")))
    }
}

/// The table files of `inputs`, saying on stderr which spreadsheet workbooks the input
/// directories hold and are not read, so a folder of mixed exports is not half read in
/// silence.
fn table_files_said(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let (files, workbooks) = table_files_and_workbooks(inputs)?;
    if !workbooks.is_empty() {
        eprintln!("not read: {}", workbook_note(&workbooks));
    }
    Ok(files)
}

fn load_annotator(
    dir: &Path,
    top_k: usize,
    batch_size: usize,
    device: DeviceArg,
) -> Result<Annotator> {
    Annotator::builder(dir)
        .top_k(top_k)
        .batch_size(batch_size)
        .device(device.open()?)
        .build()
        .with_context(|| format!("loading the model in {}", dir.display()))
}

pub(crate) fn cmd_annotate(args: AnnotateArgs) -> Result<()> {
    let annotator = Annotator::builder(&args.model)
        .top_k(args.top_k)
        .batch_size(args.batch_size)
        .specialists(specialist_use(args.no_specialists))
        .abstain(!args.no_abstain)
        .namespaces(args.namespace.clone())
        .device(args.device.open()?)
        .build()
        .with_context(|| format!("loading the model in {}", args.model.display()))?;
    let mut files = table_files_said(&args.inputs)?;
    if let Some(shard) = args.shard {
        files = files[shard.range(files.len())].to_vec();
    }
    let mut out = Stdout::lock();
    if args.output == Output::Csv {
        writeln!(
            out,
            "table,column,header,namespace,label,confidence,relation,relation_confidence,active_specialists,abstained,relation_abstained,subject_column"
        )?;
    }
    // Shown on a terminal only: a pipeline's logs stay clean.
    let mut progress = Progress::on_terminal("annotate: tables", files.len());
    let mut done = 0;
    // Read one forward pass per thread at a time (the annotator cuts them), so a directory of
    // any size streams in bounded memory.
    let mut reading = Reading::new(args.reading);
    for chunk in files.chunks(annotator.tables_per_round()) {
        let mut tables = reading.read_inputs(chunk)?;
        if let Some(subject) = &args.subject_column {
            for table in &mut tables {
                if !subject.set_in(table) {
                    eprintln!(
                        "{}: has no {subject}; relations start from the subject column the model finds",
                        table.id
                    );
                }
            }
        }
        let annotations = annotator.annotate_all(&tables)?;
        for annotation in &annotations {
            match args.output {
                Output::Json => writeln!(out, "{}", serde_json::to_string(annotation)?)?,
                Output::Csv => write_csv(&mut out, annotation)?,
            }
        }
        done += chunk.len();
        progress.set(done, "");
    }
    progress.finish("");
    reading.finish(files.len())
}

pub(crate) fn cmd_embed(args: EmbedArgs) -> Result<()> {
    let annotator = load_annotator(&args.model, 1, args.batch_size, args.device)?;
    let files = table_files_said(&args.inputs)?;
    let mut out = Stdout::lock();
    let mut progress = Progress::on_terminal("embed: tables", files.len());
    let mut done = 0;
    let mut reading = Reading::new(args.reading);
    for chunk in files.chunks(annotator.tables_per_round()) {
        let tables = reading.read_inputs(chunk)?;
        for embedded in annotator.embed(&tables)? {
            writeln!(out, "{}", serde_json::to_string(&embedded)?)?;
        }
        done += chunk.len();
        progress.set(done, "");
    }
    progress.finish("");
    reading.finish(files.len())
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn write_csv(out: &mut impl Write, annotation: &TableAnnotation) -> Result<()> {
    let active: Vec<&str> = annotation
        .router
        .iter()
        .filter(|g| g.active)
        .map(|g| g.specialist.as_str())
        .collect();
    // Columns added later go last, so that readers by position keep working.
    for column in &annotation.columns {
        let relation = column.relations.first();
        let best_relation = relation.and_then(|r| r.relation.as_ref());
        // An empty relation is either none asked (the subject column itself) or none that fits.
        let relation_abstained = relation.is_some_and(|r| r.abstained);
        for types in &column.types {
            let labels: Vec<&str> = types.labels.iter().map(|l| l.label.as_str()).collect();
            // An abstaining namespace gives no label, so no confidence either.
            let confidence = types
                .labels
                .first()
                .map_or(String::new(), |l| format!("{:.4}", l.confidence));
            writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{}",
                csv_field(&annotation.table),
                column.index,
                csv_field(column.header.as_deref().unwrap_or("")),
                csv_field(&types.namespace),
                csv_field(&labels.join("|")),
                confidence,
                csv_field(best_relation.map_or("", |r| r.label.as_str())),
                best_relation.map_or(String::new(), |r| format!("{:.4}", r.confidence)),
                csv_field(&active.join("|")),
                types.abstained,
                relation_abstained,
                annotation.subject_column,
            )?;
        }
    }
    Ok(())
}

pub(crate) fn cmd_inspect(args: InspectArgs) -> Result<()> {
    let path = &args.path;
    let manifest_path = if path.is_dir() {
        path.join(MANIFEST_FILE)
    } else {
        path.clone()
    };
    if manifest_path.extension().is_some_and(|e| e == "json") {
        inspect_model_dir(&manifest_path)
    } else {
        inspect_checkpoint(path)
    }
}

/// Shows the model directory of the manifest at `manifest_path`: its parts, namespaces and
/// files, every checksum verified by loading it.
fn inspect_model_dir(manifest_path: &Path) -> Result<()> {
    let bytes = std::fs::read(manifest_path)
        .with_context(|| format!("reading {}", manifest_path.display()))?;
    let manifest: SwarmManifest = serde_json::from_slice(&bytes)
        .with_context(|| format!("{}: not a swarm manifest", manifest_path.display()))?;
    let dir = manifest_path.parent().unwrap_or(Path::new("."));
    // Loading verifies every checksum and every tensor shape.
    let annotator = load_annotator(dir, 1, 1, DeviceArg::default())?;
    let model = annotator.model();
    let model_dir = ModelDir::open(dir)?;
    let trained = model_dir.experts().routing.is_some();
    out!("model directory {}", dir.display());
    print_parts(&manifest, model, trained)?;
    print_reading(&manifest, model)?;
    let mut total = 0;
    for file in model_dir.files()? {
        let full = dir.join(&file.path);
        let size = std::fs::metadata(&full).map(|m| m.len()).unwrap_or(0);
        total += size;
        let checksum = match &file.sha256 {
            Some(sha256) => format!("sha256 {sha256} ok"),
            None => "(holds the checksums)".to_string(),
        };
        out!(
            "  {:<34} {:<48} {:>10} bytes  {checksum}",
            file.role,
            file.path.display(),
            size,
        );
    }
    out!(
        "total {:.2} MB, every checksum verified",
        total as f64 / 1e6
    );
    Ok(())
}

/// The primary, the specialists and the experts, with their shapes.
fn print_parts(manifest: &SwarmManifest, model: &Model, trained: bool) -> Result<()> {
    out!(
        "primary: d_model {} layers {} head size {} ({} parameters)",
        manifest.config.primary.d_model,
        manifest.config.primary.n_layers,
        manifest.config.primary.head_size,
        manifest.config.primary.num_params()
    );
    for s in &model.swarm.specialists {
        let c = s.config();
        out!(
            "specialist {} (state): d_model {} layers {} ({} parameters)",
            s.name(),
            c.d_model,
            c.n_layers,
            c.num_params()
        );
    }
    let routing = model.expert_routing.as_ref();
    let mix = routing.map(|r| r.mix.host_weights());
    let mixed = mixed_namespace_names(model);
    for (i, e) in model.experts.iter().enumerate() {
        let p = &e.model.swarm.orchestrator.primary;
        let follows_rule = !trained || routing.is_some_and(|r| r.follows_rule(i, e.open_below));
        let opens = if follows_rule {
            e.open_below.map_or("on every table".to_string(), |p| {
                format!(
                    "where the primary's confidence in its labels is below {p} (the router's rule)"
                )
            })
        } else {
            "where the trained router opens it".to_string()
        };
        // The mix weights that differ from the plain average, in the namespaces it knows.
        let shared = model.space.cta.iter().filter(|n| n.head.is_none()).count();
        let known: Vec<usize> = (e.namespaces(Task::Cta).iter().copied())
            .chain(e.namespaces(Task::Cpa).iter().map(|n| shared + n))
            .collect();
        let weights: Vec<String> = (mixed.iter().enumerate())
            .filter(|&(n, _)| known.contains(&n))
            .filter_map(|(n, name)| {
                let w = mix.as_ref()?[n][i];
                (w != 1.0).then(|| format!("{w:.2} in {name}"))
            })
            .collect();
        let opens = match weights.is_empty() {
            true => format!("{opens}, averaged in"),
            false => format!("{opens}, mixed in with weight {}", weights.join(", ")),
        };
        // Only where they differ from the primary's (line `column:` below).
        let own = e.model.swarm.orchestrator.column_ngrams().copied();
        let ngrams = match own {
            Some(n) if own != manifest.config.column_ngrams => {
                format!(", its own n-grams: {}", ngrams_text(n))
            }
            _ => String::new(),
        };
        out!(
            "specialist {} (answers): d_model {} layers {}, knows {} CTA labels and {} CPA relations{ngrams}, opens {opens}",
            e.name,
            p.d_model(),
            p.blocks.len(),
            e.shared_labels(Task::Cta),
            e.shared_labels(Task::Cpa),
        );
    }
    Ok(())
}

/// The namespaces the experts' logits are mixed into, named as `--mix-weight` names them
/// (`cta:NAME`, `cpa:NAME`), in the mix's order.
fn mixed_namespace_names(model: &Model) -> Vec<String> {
    let space = &model.space;
    let cta = (space.cta.iter().filter(|n| n.head.is_none())).map(|n| format!("cta:{}", n.name));
    let cpa = space.cpa.iter().map(|n| format!("cpa:{}", n.name));
    cta.chain(cpa).collect()
}

/// The namespaces, the fusion and how a column is read.
fn print_reading(manifest: &SwarmManifest, model: &Model) -> Result<()> {
    for ns in &model.space.cta {
        out!(
            "CTA namespace {} ({}, {:?}, {:?}): {} labels",
            ns.name,
            ns.format,
            ns.kind,
            ns.activation,
            ns.labels.len()
        );
    }
    for ns in &model.space.cpa {
        out!(
            "CPA namespace {} ({}): {} relations",
            ns.name,
            ns.format,
            ns.labels.len()
        );
    }
    if manifest.specialists.is_empty() {
        out!("state fusion: none (no state specialist)");
    } else {
        out!(
            "fusion {:?}, alignment identity where the shapes agree, else trained maps, threshold {}, budget {:?}",
            manifest.config.fusion,
            manifest.config.threshold,
            manifest.config.budget
        );
    }
    let c = &manifest.config;
    out!(
        "column: pooling span mean, n-grams {}, word vectors {}, head skip {:?}{}",
        c.column_ngrams.map_or("none".into(), ngrams_text),
        model
            .swarm
            .orchestrator
            .column_words()
            .map_or("none".into(), |(c, v)| format!(
                "{} words of dimension {}, means over the header and {} cells{}",
                v.len(),
                c.dim,
                c.max_cells,
                if c.table_topic {
                    ", and the table's topic"
                } else {
                    ""
                }
            )),
        c.head_skip,
        if c.column_fusion {
            ", column fusion (specialists' column readings join the representations)"
        } else {
            ""
        }
    );
    Ok(())
}

/// Shows an RWKV-7 checkpoint: its configuration, size and checksum.
fn inspect_checkpoint(path: &Path) -> Result<()> {
    let file = colswarm_rwkv::checkpoint::CheckpointFile::open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    let config = colswarm_rwkv::checkpoint::read_config(&file)?;
    let size = std::fs::metadata(path)?.len();
    out!("RWKV-7 checkpoint {}", path.display());
    out!("{}", serde_json::to_string_pretty(&config)?);
    out!(
        "{} parameters, {size} bytes, sha256 {} (embedded checksum verified)",
        config.num_params(),
        sha256_file(path)?
    );
    Ok(())
}

pub(crate) fn cmd_bench(args: BenchArgs) -> Result<()> {
    let annotator = load_annotator(&args.model, 3, args.batch_size, args.device)?;
    let tables = Reading::new(ReadingArgs::default()).read_inputs(&table_files(&args.inputs)?)?;
    let columns: usize = tables.iter().map(|t| t.n_columns()).sum();
    let runs = [
        (SpecialistUse::Off, "primary alone"),
        (SpecialistUse::Router, "with specialists (router decides)"),
        (SpecialistUse::All, "with every specialist on every table"),
    ];
    for (specialists, name) in runs {
        let annotator = annotator.with_specialists(specialists);
        let warm_up = annotator.annotate_all(&tables)?;
        let gates: usize = warm_up.iter().map(|a| a.router.len()).sum();
        let active: usize = warm_up
            .iter()
            .map(|a| a.router.iter().filter(|g| g.active).count())
            .sum();
        let mut seconds = Vec::new();
        for _ in 0..args.repeat.max(1) {
            let start = Instant::now();
            annotator.annotate_all(&tables)?;
            seconds.push(start.elapsed().as_secs_f64());
        }
        seconds.sort_by(f64::total_cmp);
        let median = seconds[seconds.len() / 2];
        out!(
            "{name}: {} tables, {} columns, {active} of {gates} (table, specialist) pairs active, median {:.3} s over {} runs = {:.0} columns/s",
            tables.len(),
            columns,
            median,
            seconds.len(),
            columns as f64 / median
        );
    }
    Ok(())
}

/// What a column n-gram configuration reads, for `inspect`.
fn ngrams_text(n: ColumnNgramsConfig) -> String {
    format!(
        "{} buckets of {}-{}-grams over the header and {} cells{}{}",
        n.buckets,
        n.min_n,
        n.max_n,
        n.max_cells,
        if n.neighbours {
            ", and the other columns' headers and first cells"
        } else {
            ""
        },
        if n.value_stats {
            ", and the cells' value statistics"
        } else {
            ""
        },
    )
}
