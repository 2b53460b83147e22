//! The knowledge corpus `colswarm pretrain` reads: typed gazetteers, unlabelled tables with
//! headers, and a teacher's embeddings of their strings, as `scripts/knowledge/` exports them.
//!
//! ```text
//! CORPUS/gazetteers/index.json       {"city": {"count": …, "ship": true, …}, …}
//! CORPUS/gazetteers/<type>.txt       one entry per line
//! CORPUS/tables/index.json           [{"name", "source", "ship", "path", "headers"}, …]
//! CORPUS/tables/<source>/<name>.csv  header row + rows
//! CORPUS/teacher/strings.jsonl       {"text": …} per line, in embedding row order
//! CORPUS/teacher/embeddings.safetensors  tensor `embeddings` [strings, dim], F16 or F32
//! ```
//!
//! Only entries marked `"ship": true` are read: a specialist trained here may be distributed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use colswarm_tables::{CsvOptions, read_csv};
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use crate::error::TrainError;

/// A named list of entries of one type (cities, currencies, film titles…).
#[derive(Clone, Debug)]
pub struct Gazetteer {
    /// The type's name (the file stem).
    pub name: String,
    /// Its distinct entries.
    pub entries: Vec<String>,
}

/// An unlabelled table: one header and one list of cell texts per column.
#[derive(Clone, Debug)]
pub struct CorpusTable {
    /// `source/name`.
    pub id: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Column-major cell texts (empty text: a missing value).
    pub columns: Vec<Vec<String>>,
}

/// A teacher's embedding of each of a set of strings.
#[derive(Clone, Debug)]
pub struct Teacher {
    rows: HashMap<String, usize>,
    dim: usize,
    values: Vec<f32>,
}

impl Teacher {
    /// Builds a teacher from strings and their embeddings (`values` is `[texts.len(), dim]`).
    pub fn new(texts: Vec<String>, dim: usize, values: Vec<f32>) -> Result<Self, TrainError> {
        if dim == 0 || values.len() != texts.len() * dim {
            return Err(TrainError::Config(format!(
                "teacher: {} values for {} strings of dimension {dim}",
                values.len(),
                texts.len()
            )));
        }
        let rows = texts.into_iter().enumerate().map(|(i, t)| (t, i)).collect();
        Ok(Teacher { rows, dim, values })
    }

    /// The embedding width.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The number of embedded strings.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no string is embedded.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The embedding of `text`, if the teacher embedded it.
    pub fn embedding(&self, text: &str) -> Option<&[f32]> {
        let row = *self.rows.get(text)?;
        Some(&self.values[row * self.dim..(row + 1) * self.dim])
    }

    /// The L2-normalised mean of the embeddings of those `texts` the teacher knows; `None` when
    /// it knows none of them.
    pub fn mean_embedding<'a>(&self, texts: impl IntoIterator<Item = &'a str>) -> Option<Vec<f32>> {
        let mut sum = vec![0.0f32; self.dim];
        let mut known = 0;
        for text in texts {
            if let Some(e) = self.embedding(text) {
                sum.iter_mut().zip(e).for_each(|(s, v)| *s += v);
                known += 1;
            }
        }
        let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt();
        (known > 0 && norm > 0.0).then(|| sum.iter().map(|v| v / norm).collect())
    }
}

/// Everything read from a corpus directory.
#[derive(Clone, Debug)]
pub struct KnowledgeCorpus {
    /// The directory.
    pub root: PathBuf,
    /// Typed gazetteers, in name order.
    pub gazetteers: Vec<Gazetteer>,
    /// Unlabelled tables, in index order.
    pub tables: Vec<CorpusTable>,
    /// The teacher's embeddings, when the corpus has them.
    pub teacher: Option<Teacher>,
}

#[derive(Deserialize)]
struct GazetteerEntry {
    ship: bool,
}

#[derive(Deserialize)]
struct TableEntry {
    name: String,
    source: String,
    ship: bool,
    path: String,
}

#[derive(Deserialize)]
struct TeacherString {
    text: String,
}

fn corpus_error(path: &Path, reason: impl Into<String>) -> TrainError {
    TrainError::Corpus {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn read_text(path: &Path) -> Result<String, TrainError> {
    std::fs::read_to_string(path).map_err(|e| corpus_error(path, e.to_string()))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, TrainError> {
    serde_json::from_str(&read_text(path)?)
        .map_err(|e| corpus_error(path, format!("invalid JSON: {e}")))
}

impl KnowledgeCorpus {
    /// Reads the corpus in `root`. Each part is optional (an objective checks for what it
    /// needs); a part that is present but unreadable is an error naming its file.
    pub fn open(root: &Path, with_teacher: bool) -> Result<Self, TrainError> {
        if !root.is_dir() {
            return Err(corpus_error(
                root,
                "not a directory (build one with scripts/knowledge/)",
            ));
        }
        Ok(KnowledgeCorpus {
            root: root.to_path_buf(),
            gazetteers: read_gazetteers(&root.join("gazetteers"))?,
            tables: read_tables(&root.join("tables"))?,
            teacher: if with_teacher {
                Some(read_teacher(&root.join("teacher"))?)
            } else {
                None
            },
        })
    }
}

fn read_gazetteers(dir: &Path) -> Result<Vec<Gazetteer>, TrainError> {
    let index_path = dir.join("index.json");
    if !index_path.exists() {
        return Ok(Vec::new());
    }
    let index: HashMap<String, GazetteerEntry> = read_json(&index_path)?;
    let mut names: Vec<&String> = index
        .iter()
        .filter(|(_, e)| e.ship)
        .map(|(n, _)| n)
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            if name.contains(['/', '\\']) || name.starts_with('.') {
                return Err(corpus_error(
                    &index_path,
                    format!("invalid gazetteer name `{name}`"),
                ));
            }
            let path = dir.join(format!("{name}.txt"));
            let entries: Vec<String> = read_text(&path)?
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect();
            if entries.is_empty() {
                return Err(corpus_error(&path, "no entries"));
            }
            Ok(Gazetteer {
                name: name.clone(),
                entries,
            })
        })
        .collect()
}

fn read_tables(dir: &Path) -> Result<Vec<CorpusTable>, TrainError> {
    let index_path = dir.join("index.json");
    if !index_path.exists() {
        return Ok(Vec::new());
    }
    let index: Vec<TableEntry> = read_json(&index_path)?;
    let corpus = dir.parent().unwrap_or(dir);
    index
        .into_iter()
        .filter(|e| e.ship)
        .map(|entry| {
            if entry.path.contains("..") || Path::new(&entry.path).is_absolute() {
                return Err(corpus_error(
                    &index_path,
                    format!(
                        "table `{}`: path `{}` leaves the corpus",
                        entry.name, entry.path
                    ),
                ));
            }
            let path = corpus.join(&entry.path);
            let table = read_csv(&path, &CsvOptions::default())
                .map_err(|e| corpus_error(&path, e.to_string()))?;
            Ok(CorpusTable {
                id: format!("{}/{}", entry.source, entry.name),
                headers: table
                    .columns
                    .iter()
                    .map(|c| c.header.clone().unwrap_or_default())
                    .collect(),
                columns: table
                    .columns
                    .iter()
                    .map(|c| c.cells.iter().map(|cell| cell.text().to_string()).collect())
                    .collect(),
            })
        })
        .collect()
}

fn read_teacher(dir: &Path) -> Result<Teacher, TrainError> {
    let strings_path = dir.join("strings.jsonl");
    let texts: Vec<String> = read_text(&strings_path)?
        .lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str::<TeacherString>(line)
                .map(|s| s.text)
                .map_err(|e| corpus_error(&strings_path, format!("line {}: {e}", i + 1)))
        })
        .collect::<Result<_, _>>()?;
    let path = dir.join("embeddings.safetensors");
    let bytes = std::fs::read(&path).map_err(|e| corpus_error(&path, e.to_string()))?;
    let tensors = SafeTensors::deserialize(&bytes)
        .map_err(|e| corpus_error(&path, format!("not a safetensors file: {e}")))?;
    let view = tensors
        .tensor("embeddings")
        .map_err(|_| corpus_error(&path, "no tensor `embeddings`"))?;
    let &[rows, dim] = view.shape() else {
        return Err(corpus_error(
            &path,
            format!(
                "tensor `embeddings` has shape {:?}, expected [strings, dim]",
                view.shape()
            ),
        ));
    };
    if rows != texts.len() {
        return Err(corpus_error(
            &path,
            format!(
                "tensor `embeddings` has {rows} rows but {} has {} strings",
                strings_path.display(),
                texts.len()
            ),
        ));
    }
    let data = view.data();
    let values: Vec<f32> = match view.dtype() {
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        other => {
            return Err(corpus_error(
                &path,
                format!("tensor `embeddings` is {other:?}, expected F16 or F32"),
            ));
        }
    };
    if let Some(row) = values
        .chunks(dim.max(1))
        .position(|r| r.iter().any(|v| !v.is_finite()))
    {
        return Err(corpus_error(
            &path,
            format!("tensor `embeddings`: row {row} is not finite"),
        ));
    }
    Teacher::new(texts, dim, values).map_err(|e| corpus_error(&path, e.to_string()))
}
