//! `colswarm._colswarm`: the Rust side of the `colswarm` Python package.
//!
//! A thin layer over [`colswarm_model`] and the evaluation of [`colswarm_eval`]: tables come in as file
//! paths or as columns of strings (the pure-Python layer turns pandas DataFrames into those),
//! annotations go out as the JSON lines `colswarm annotate` prints, so the two cannot drift
//! apart. Every long call (reading files, annotating, evaluating) releases the GIL.
//! Errors are raised as the exception classes of `colswarm._errors`, their message the Rust
//! error's (file, line and column index included).

use std::path::PathBuf;

use colswarm_eval::{
    DatasetFormat, EvalError, EvalOptions, Split, default_task, evaluate, load_tables_encoded,
};
use colswarm_model::{
    Annotator, DeviceChoice, DeviceError, ModelError, ReadReport, ReadTableOptions, SpecialistUse,
    SubjectColumn, TableAnnotation, Task, TextEncoding, read_table_with_report,
};
use colswarm_tables::{Cell, Column, Table, TableError, read_labelled_tables};
use colswarm_train::{FineTuneConfig, FineTuneReport, TrainError, fine_tune};
use pyo3::exceptions::{PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// Where an error points: a file, and within it a line and a column index when known.
#[derive(Default)]
struct Location {
    path: Option<PathBuf>,
    line: Option<u64>,
    column: Option<usize>,
    not_found: bool,
    io: bool,
}

fn table_location(e: &TableError) -> Location {
    let mut at = Location::default();
    match e {
        TableError::Io { path, source } => {
            at.path = Some(path.clone());
            at.io = true;
            at.not_found = source.kind() == std::io::ErrorKind::NotFound;
        }
        TableError::InvalidUtf8 {
            path, line, column, ..
        }
        | TableError::UnclosedQuote {
            path, line, column, ..
        }
        | TableError::CellTooLarge {
            path, line, column, ..
        } => {
            at.path = Some(path.clone());
            at.line = Some(*line);
            at.column = Some(*column);
        }
        TableError::RaggedRow { path, line, .. }
        | TableError::RecordTooLarge { path, line, .. }
        | TableError::TooManyColumns { path, line, .. }
        | TableError::TooManyRows { path, line, .. } => {
            at.path = Some(path.clone());
            at.line = Some(*line);
        }
        TableError::EmptyTable { path }
        | TableError::Utf16 { path }
        | TableError::NotText { path, .. }
        | TableError::Gzip { path, .. } => {
            at.path = Some(path.clone());
        }
        TableError::LabelledColumn { path, line, .. }
        | TableError::LabelFile { path, line, .. } => {
            at.path = Some(path.clone());
            at.line = Some(*line);
        }
        _ => {}
    }
    at
}

fn model_location(e: &ModelError) -> Location {
    match e {
        ModelError::Table(t) => table_location(t),
        ModelError::Io { path, source } => Location {
            path: Some(path.clone()),
            not_found: source.kind() == std::io::ErrorKind::NotFound,
            io: true,
            ..Location::default()
        },
        ModelError::Input { path, reason } => Location {
            path: Some(path.clone()),
            not_found: reason.contains("no such file"),
            io: true,
            ..Location::default()
        },
        ModelError::File { path, .. } => Location {
            path: Some(path.clone()),
            ..Location::default()
        },
        _ => Location::default(),
    }
}

/// Builds the `colswarm._errors` exception for `message`: `ColswarmFileNotFoundError` or
/// `ColswarmIOError` for files that cannot be opened, `ColswarmError` (a `ValueError`) for
/// everything else, with `path`, `line` and `column` attributes where the error names them.
fn raise(py: Python<'_>, message: String, at: Location) -> PyErr {
    let class = if at.not_found {
        "ColswarmFileNotFoundError"
    } else if at.io {
        "ColswarmIOError"
    } else {
        "ColswarmError"
    };
    let build = || -> PyResult<PyErr> {
        let errors = py.import("colswarm._errors")?;
        let exc = errors.getattr(class)?.call1((message.clone(),))?;
        let path = at.path.as_ref().map(|p| p.to_string_lossy().into_owned());
        exc.setattr("path", path)?;
        exc.setattr("line", at.line)?;
        exc.setattr("column", at.column)?;
        Ok(PyErr::from_value(exc))
    };
    // Only reached when the package is broken (the module imported without its package).
    build().unwrap_or_else(|_| PyValueError::new_err(message))
}

fn model_err(py: Python<'_>, e: ModelError) -> PyErr {
    let at = model_location(&e);
    raise(py, e.to_string(), at)
}

/// A file that could not be read or written.
fn io_location(path: &std::path::Path, source: &std::io::Error) -> Location {
    Location {
        path: Some(path.to_path_buf()),
        not_found: source.kind() == std::io::ErrorKind::NotFound,
        io: true,
        ..Location::default()
    }
}

fn eval_err(py: Python<'_>, e: EvalError) -> PyErr {
    let at = match &e {
        EvalError::Model(m) => model_location(m),
        EvalError::Table(t) => table_location(t),
        EvalError::Io { path, source } => io_location(path, source),
        _ => Location::default(),
    };
    raise(py, e.to_string(), at)
}

fn train_err(py: Python<'_>, e: TrainError) -> PyErr {
    let at = match &e {
        TrainError::Model(m) => model_location(m),
        TrainError::Table(t) => table_location(t),
        TrainError::Io { path, source } => io_location(path, source),
        _ => Location::default(),
    };
    raise(py, e.to_string(), at)
}

fn value_err(py: Python<'_>, message: String) -> PyErr {
    raise(py, message, Location::default())
}

/// A table as Python passes it: `(id, headers or None, columns)` (see [`table_from_columns`]).
type RawTable = (String, Option<Vec<Option<String>>>, Vec<Vec<String>>);

/// A table to annotate: a file, or a table built from columns of strings.
enum Input {
    Path(PathBuf),
    Table(Table),
}

/// `(id, headers or None, columns)`: `headers` one entry (a string or None) per column,
/// `columns` one list of cell strings per column, all of the same length.
fn table_from_columns(
    id: String,
    headers: Option<Vec<Option<String>>>,
    columns: Vec<Vec<String>>,
) -> Result<Table, String> {
    if columns.is_empty() {
        return Err(format!("{id}: empty table (no columns)"));
    }
    if let Some(h) = &headers
        && h.len() != columns.len()
    {
        return Err(format!(
            "{id}: {} headers for {} columns",
            h.len(),
            columns.len()
        ));
    }
    let rows = columns.iter().map(Vec::len).max().unwrap_or(0);
    let has_header_row = headers.is_some();
    let mut headers = headers.map(Vec::into_iter);
    let columns = columns
        .into_iter()
        .map(|cells| {
            let header = headers.as_mut().and_then(|h| h.next().flatten());
            let mut cells: Vec<Cell> = cells.into_iter().map(Cell::new).collect();
            cells.resize_with(rows, Cell::null);
            Column::new(header, cells)
        })
        .collect();
    let mut table = Table::new(id, columns);
    table.context.has_header_row = has_header_row;
    Ok(table)
}

fn extract_input(item: &Bound<'_, PyAny>) -> PyResult<Input> {
    if let Ok(tuple) = item.cast::<PyTuple>() {
        let (id, headers, columns): RawTable = tuple.extract()?;
        return table_from_columns(id, headers, columns)
            .map(Input::Table)
            .map_err(|m| value_err(item.py(), m));
    }
    Ok(Input::Path(item.extract::<PathBuf>()?))
}

fn parse_specialists(name: &str) -> Result<SpecialistUse, String> {
    match name {
        "router" => Ok(SpecialistUse::Router),
        "off" | "none" => Ok(SpecialistUse::Off),
        "all" => Ok(SpecialistUse::All),
        _ => Err(format!(
            "specialists `{name}`: expected \"router\", \"off\" or \"all\""
        )),
    }
}

/// A loaded model directory (see `colswarm.Annotator`, which wraps this class).
#[pyclass(frozen, module = "colswarm._colswarm", name = "Annotator")]
struct PyAnnotator {
    inner: Annotator,
    model_dir: PathBuf,
    lossy: bool,
    encoding: TextEncoding,
    sample_rows: usize,
    batch_size: usize,
    /// The column relations start from in every table that has it.
    subject_column: Option<SubjectColumn>,
}

impl PyAnnotator {
    /// Reads `inputs` (files read here, tables as given) `batch_size × threads` at a time and
    /// hands each round's tables to `each`, in order. Returns each file's read report, for
    /// [`warn_repairs`].
    fn in_rounds(
        &self,
        inputs: Vec<Input>,
        mut each: impl FnMut(&[Table]) -> Result<(), ModelError>,
    ) -> Result<Vec<(PathBuf, ReadReport)>, ModelError> {
        let options = ReadTableOptions {
            lossy: self.lossy,
            sample_rows: self.sample_rows,
            encoding: self.encoding,
        };
        let chunk = self.batch_size * self.inner.threads();
        let mut repairs = Vec::new();
        let mut inputs = inputs.into_iter().peekable();
        while inputs.peek().is_some() {
            let mut tables = Vec::with_capacity(chunk);
            for input in inputs.by_ref().take(chunk) {
                let mut table = match input {
                    Input::Path(path) => {
                        let (table, report) = read_table_with_report(&path, &options)?;
                        repairs.push((path, report));
                        table
                    }
                    Input::Table(table) => table,
                };
                // A table without the named column keeps the one the model finds.
                if let Some(subject) = &self.subject_column {
                    subject.set_in(&mut table);
                }
                tables.push(table);
            }
            each(&tables)?;
        }
        Ok(repairs)
    }
}

/// One Python `UserWarning` per file whose reading repaired something (`path: 2 cells read as
/// Windows-1252`), as `colswarm annotate` says them on stderr; sampling, which `sample_rows`
/// asks for, is not a repair.
fn warn_repairs(py: Python<'_>, reports: &[(PathBuf, ReadReport)]) -> PyResult<()> {
    let category = py.get_type::<PyUserWarning>();
    for (path, report) in reports {
        let repairs = report.repairs();
        if repairs.is_clean() {
            continue;
        }
        let text = format!("{}: {repairs}", path.display()).replace('\0', " ");
        let message =
            std::ffi::CString::new(text).map_err(|e| PyValueError::new_err(e.to_string()))?;
        PyErr::warn(py, &category, &message, 1)?;
    }
    Ok(())
}

#[pymethods]
impl PyAnnotator {
    #[new]
    #[pyo3(signature = (model_dir, top_k = 3, threads = 1, namespaces = None, specialists = "router", batch_size = 16, lossy = false, sample_rows = 1000, device = "cpu", abstain = true, subject_column = None, encoding = "utf-8"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        model_dir: PathBuf,
        top_k: usize,
        threads: usize,
        namespaces: Option<Vec<String>>,
        specialists: &str,
        batch_size: usize,
        lossy: bool,
        sample_rows: usize,
        device: &str,
        abstain: bool,
        subject_column: Option<String>,
        encoding: &str,
    ) -> PyResult<Self> {
        let specialists = parse_specialists(specialists).map_err(|m| value_err(py, m))?;
        let encoding: TextEncoding = encoding.parse().map_err(|m| value_err(py, m))?;
        let device: DeviceChoice = device
            .parse()
            .map_err(|e: DeviceError| value_err(py, e.to_string()))?;
        let mut builder = Annotator::builder(&model_dir)
            .device(device)
            .top_k(top_k)
            .threads(threads)
            .batch_size(batch_size)
            .specialists(specialists)
            .abstain(abstain);
        if let Some(names) = namespaces {
            builder = builder.namespaces(names);
        }
        let inner = py
            .detach(|| builder.build())
            .map_err(|e| model_err(py, e))?;
        // An unknown namespace only shows when annotating: check it now, where it was given.
        let model = inner.model();
        for name in &inner.options().cta_namespaces {
            if !model.space.cta.iter().any(|ns| &ns.name == name) {
                let known: Vec<&str> = model.space.cta.iter().map(|n| n.name.as_str()).collect();
                return Err(value_err(
                    py,
                    format!(
                        "namespace `{name}` is not one of the model's CTA namespaces ({})",
                        known.join(", ")
                    ),
                ));
            }
        }
        Ok(PyAnnotator {
            inner,
            model_dir,
            lossy,
            encoding,
            sample_rows: sample_rows.max(1),
            batch_size: batch_size.max(1),
            subject_column: subject_column.map(|s| match s.parse() {
                Ok(subject) => subject,
                Err(never) => match never {},
            }),
        })
    }

    /// Annotates tables (file paths or `(id, headers, columns)` tuples), returning one JSON
    /// object per table, exactly as `colswarm annotate` prints it. Files are read and tables
    /// annotated with the GIL released, `batch_size × threads` tables at a time.
    fn annotate_json(&self, py: Python<'_>, items: Vec<Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
        let inputs = items
            .iter()
            .map(extract_input)
            .collect::<PyResult<Vec<Input>>>()?;
        let result = py.detach(|| {
            let mut out = Vec::with_capacity(inputs.len());
            let repairs = self.in_rounds(inputs, |tables| {
                for annotation in self.inner.annotate_all(tables)? {
                    out.push(to_json(&annotation));
                }
                Ok(())
            })?;
            Ok((out, repairs))
        });
        let (out, repairs) = result.map_err(|e| model_err(py, e))?;
        warn_repairs(py, &repairs)?;
        Ok(out)
    }

    /// Every column's embedding, the vector the model's heads read (`colswarm embed`): per
    /// table, its id and `(index, header, vector)` per column. Read and computed with the GIL
    /// released, `batch_size × threads` tables at a time.
    #[allow(clippy::type_complexity)]
    fn embed(
        &self,
        py: Python<'_>,
        items: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<Vec<(String, Vec<(usize, Option<String>, Vec<f32>)>)>> {
        let inputs = items
            .iter()
            .map(extract_input)
            .collect::<PyResult<Vec<Input>>>()?;
        let result = py.detach(|| {
            let mut out = Vec::with_capacity(inputs.len());
            let repairs = self.in_rounds(inputs, |tables| {
                for table in self.inner.embed(tables)? {
                    let columns = table
                        .columns
                        .into_iter()
                        .map(|c| (c.index, c.header, c.vector))
                        .collect();
                    out.push((table.table, columns));
                }
                Ok(())
            })?;
            Ok((out, repairs))
        });
        let (out, repairs) = result.map_err(|e| model_err(py, e))?;
        warn_repairs(py, &repairs)?;
        Ok(out)
    }

    /// The model directory, CTA and CPA namespaces, specialists and options, for `__repr__`.
    fn describe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let model = self.inner.model();
        let options = self.inner.options();
        let d = PyDict::new(py);
        d.set_item("model_dir", self.model_dir.to_string_lossy())?;
        let cta: Vec<&str> = model.space.cta.iter().map(|n| n.name.as_str()).collect();
        let cpa: Vec<&str> = model.space.cpa.iter().map(|n| n.name.as_str()).collect();
        d.set_item("cta_namespaces", cta)?;
        d.set_item("cpa_namespaces", cpa)?;
        d.set_item("specialist_names", model.specialist_names.clone())?;
        let experts: Vec<&str> = model.experts.iter().map(|e| e.name.as_str()).collect();
        d.set_item("expert_names", experts)?;
        d.set_item("namespaces", options.cta_namespaces.clone())?;
        d.set_item("top_k", options.top_k)?;
        d.set_item("abstain", options.abstain)?;
        d.set_item("batch_size", options.batch_size)?;
        d.set_item("threads", self.inner.threads())?;
        let specialists = match options.specialists {
            SpecialistUse::Router => "router",
            SpecialistUse::Off => "off",
            SpecialistUse::All => "all",
        };
        d.set_item("specialists", specialists)?;
        d.set_item("lossy", self.lossy)?;
        d.set_item("encoding", self.encoding.to_string())?;
        d.set_item("sample_rows", self.sample_rows)?;
        Ok(d)
    }
}

fn to_json(annotation: &TableAnnotation) -> String {
    // Plain structs of strings and numbers: serialisation cannot fail.
    serde_json::to_string(annotation).unwrap_or_default()
}

/// Reads a table file as `colswarm annotate` does: `(id, headers or None, columns)`, headers
/// one string or None per column, columns one list of cell strings each.
#[pyfunction]
#[pyo3(signature = (path, lossy = false, sample_rows = 1000, encoding = "utf-8"))]
fn read_table(
    py: Python<'_>,
    path: PathBuf,
    lossy: bool,
    sample_rows: usize,
    encoding: &str,
) -> PyResult<RawTable> {
    let options = ReadTableOptions {
        lossy,
        sample_rows: sample_rows.max(1),
        encoding: encoding.parse().map_err(|m| value_err(py, m))?,
    };
    let (table, report) = py
        .detach(|| read_table_with_report(&path, &options))
        .map_err(|e| model_err(py, e))?;
    warn_repairs(py, &[(path, report)])?;
    let headers = table
        .context
        .has_header_row
        .then(|| table.columns.iter().map(|c| c.header.clone()).collect());
    let columns = table
        .columns
        .iter()
        .map(|c| c.cells.iter().map(|cell| cell.text().to_string()).collect())
        .collect();
    Ok((table.id, headers, columns))
}

/// Scores a model on a benchmark as `colswarm eval --json` does, returning the same JSON
/// object (as a string).
#[pyfunction]
#[pyo3(signature = (model_dir, format, inputs, split = "all", task = None, namespace = None, no_specialists = false, all_specialists = false, batch_size = 16, device = "cpu", encoding = "utf-8"))]
#[allow(clippy::too_many_arguments)]
fn evaluate_json(
    py: Python<'_>,
    model_dir: PathBuf,
    format: &str,
    inputs: Vec<PathBuf>,
    split: &str,
    task: Option<&str>,
    namespace: Option<String>,
    no_specialists: bool,
    all_specialists: bool,
    batch_size: usize,
    device: &str,
    encoding: &str,
) -> PyResult<String> {
    let device: DeviceChoice = device
        .parse()
        .map_err(|e: DeviceError| value_err(py, e.to_string()))?;
    let format: DatasetFormat = format.parse().map_err(|m| value_err(py, m))?;
    let encoding: TextEncoding = encoding.parse().map_err(|m| value_err(py, m))?;
    let split: Split = split.parse().map_err(|m| value_err(py, m))?;
    let task: Option<Task> = task
        .map(str::parse)
        .transpose()
        .map_err(|m: String| value_err(py, m))?;
    if no_specialists && all_specialists {
        return Err(value_err(
            py,
            "no_specialists and all_specialists exclude each other".into(),
        ));
    }
    if inputs.is_empty() {
        return Err(value_err(py, "input names no file or directory".into()));
    }
    enum Failure {
        Model(ModelError),
        Eval(EvalError),
    }
    let run = || -> Result<serde_json::Value, Failure> {
        let device = device.device().map_err(|e| Failure::Model(e.into()))?;
        let model = colswarm_model::Model::load(&model_dir, &device).map_err(Failure::Model)?;
        let data = load_tables_encoded(format, &inputs, split, encoding)
            .map_err(|e| Failure::Eval(e.into()))?;
        let task = task.unwrap_or_else(|| default_task(format, &data.tables));
        let options = EvalOptions {
            task,
            namespace,
            batch_size: batch_size.max(1),
            specialists: if all_specialists {
                SpecialistUse::All
            } else if no_specialists {
                SpecialistUse::Off
            } else {
                SpecialistUse::Router
            },
            progress: false,
            probabilities: false,
            own_subject: false,
        };
        let report = evaluate(&model, &data.tables, format, &options).map_err(Failure::Eval)?;
        // The fields `colswarm eval --json` adds to the report.
        let mut value = serde_json::to_value(&report).unwrap_or_default();
        value["format"] = serde_json::json!(format.name());
        value["split"] = serde_json::json!(split.to_string());
        value["columns_per_second"] =
            serde_json::json!(report.n_columns as f64 / report.seconds.max(1e-9));
        Ok(value)
    };
    match py.detach(run) {
        Ok(value) => Ok(value.to_string()),
        Err(Failure::Model(e)) => Err(model_err(py, e)),
        Err(Failure::Eval(e)) => Err(eval_err(py, e)),
    }
}

/// Adds a namespace fitted on a labels file (`table,column,label`) over the tables in
/// `tables_dir` to the model in `model_dir`, written to `out_dir`, as `colswarm fine-tune`
/// does; returns its report as a JSON string.
#[pyfunction]
#[pyo3(signature = (model_dir, tables_dir, labels, out_dir, namespace, seed = 0, max_steps = 300, abstain = true, progress = false, encoding = "utf-8"))]
#[allow(clippy::too_many_arguments)]
fn fine_tune_json(
    py: Python<'_>,
    model_dir: PathBuf,
    tables_dir: PathBuf,
    labels: PathBuf,
    out_dir: PathBuf,
    namespace: String,
    seed: u64,
    max_steps: usize,
    abstain: bool,
    progress: bool,
    encoding: &str,
) -> PyResult<String> {
    let options = ReadTableOptions {
        encoding: encoding.parse().map_err(|m| value_err(py, m))?,
        ..ReadTableOptions::default()
    };
    let config = FineTuneConfig {
        seed,
        max_steps: max_steps.max(1),
        eval_every: 10.min(max_steps.max(1)),
        abstain,
        progress,
        ..FineTuneConfig::new(namespace)
    };
    let run = || -> Result<FineTuneReport, TrainError> {
        let tables = read_labelled_tables(&labels, &tables_dir, &options)?;
        fine_tune(&model_dir, &tables, &out_dir, &config)
    };
    let report = py.detach(run).map_err(|e| train_err(py, e))?;
    Ok(serde_json::to_string(&report).unwrap_or_default())
}

/// The Rust extension of the `colswarm` package.
#[pymodule]
fn _colswarm(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAnnotator>()?;
    m.add_function(wrap_pyfunction!(read_table, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate_json, m)?)?;
    m.add_function(wrap_pyfunction!(fine_tune_json, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
