//! Synthetic tables for each objective, drawn from the corpus with a seeded generator: the same
//! seed and step give the same tables, so a resumed run trains on exactly what an uninterrupted
//! one would have.
//!
//! One entry in [`PretrainData::held_out_every`](super::config::PretrainData::held_out_every) — a gazetteer entry or string by a hash of
//! its text, a corpus table by a hash of its id — never appears in training tables; the
//! held-out tables are drawn from those alone.

use colswarm_tables::{Cell, Column, Table};
use rand::Rng;
use rand::seq::{IndexedRandom, SliceRandom};

use super::config::{Objective, PretrainConfig};
use super::corpus::{KnowledgeCorpus, Teacher};
use crate::error::TrainError;
use crate::run::rng_for;
use colswarm_tables::fnv1a;

/// Stream of the training tables, one generator per step.
const TRAIN_STREAM: u64 = 11;
/// Stream of the held-out tables, one generator per table.
const HELD_OUT_STREAM: u64 = 12;

/// The synthetic training tables of step `step`.
pub(crate) fn train_tables(
    sampler: &Sampler<'_>,
    config: &PretrainConfig,
    step: usize,
) -> Vec<SynthTable> {
    let mut rng = rng_for(config.run.seed, TRAIN_STREAM, step as u64);
    (0..config.optimizer.batch_size)
        .filter_map(|i| sampler.draw(&mut rng, Split::Train, &format!("train-{step}-{i}")))
        .collect()
}

/// The held-out tables every evaluation scores.
pub(crate) fn held_out_tables(sampler: &Sampler<'_>, config: &PretrainConfig) -> Vec<SynthTable> {
    (0..config.data.eval_tables)
        .filter_map(|i| {
            let mut rng = rng_for(config.run.seed, HELD_OUT_STREAM, i as u64);
            sampler.draw(&mut rng, Split::HeldOut, &format!("held-out-{i}"))
        })
        .collect()
}

/// Which part of the corpus a table is drawn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Split {
    Train,
    HeldOut,
}

impl Split {
    fn index(self) -> usize {
        match self {
            Split::Train => 0,
            Split::HeldOut => 1,
        }
    }
}

/// What the model must produce for one column.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Target {
    /// A gazetteer type.
    Class(usize),
    /// A unit-length teacher embedding.
    Embedding(Vec<f32>),
}

/// A synthetic table and one target per column.
#[derive(Clone, Debug)]
pub(crate) struct SynthTable {
    pub(crate) table: Table,
    pub(crate) targets: Vec<Target>,
    /// The header each column's target embeds ([`Objective::Header`] only).
    pub(crate) headers: Vec<String>,
}

fn split_of(key: &str, every: u64) -> Split {
    if fnv1a(key.as_bytes()).is_multiple_of(every) {
        Split::HeldOut
    } else {
        Split::Train
    }
}

/// A list of strings split into its training and held-out parts.
#[derive(Clone, Debug, Default)]
struct SplitPool {
    train: Vec<String>,
    held_out: Vec<String>,
}

impl SplitPool {
    fn of(strings: impl IntoIterator<Item = String>, every: u64) -> Self {
        let mut pool = SplitPool::default();
        for s in strings {
            match split_of(&s, every) {
                Split::Train => pool.train.push(s),
                Split::HeldOut => pool.held_out.push(s),
            }
        }
        pool
    }

    fn part(&self, split: Split) -> &[String] {
        match split {
            Split::Train => &self.train,
            Split::HeldOut => &self.held_out,
        }
    }
}

/// The corpus, split and indexed for drawing tables.
#[derive(Debug)]
pub(crate) struct Sampler<'a> {
    corpus: &'a KnowledgeCorpus,
    config: &'a PretrainConfig,
    /// Per gazetteer, its entries split.
    gazetteers: Vec<SplitPool>,
    /// Per split ([`Split::index`]): the corpus tables in it.
    tables_in: [Vec<usize>; 2],
    /// Per split: the gazetteers with entries in it.
    gazetteers_in: [Vec<usize>; 2],
    /// Every corpus header, for decoy headers.
    headers: Vec<String>,
}

impl<'a> Sampler<'a> {
    /// Splits the corpus; fails when it lacks what the objective needs.
    pub(crate) fn new(
        corpus: &'a KnowledgeCorpus,
        config: &'a PretrainConfig,
    ) -> Result<Self, TrainError> {
        let every = config.data.held_out_every;
        let gazetteers: Vec<SplitPool> = corpus
            .gazetteers
            .iter()
            .map(|g| SplitPool::of(g.entries.iter().cloned(), every))
            .collect();
        let table_split: Vec<Split> = corpus
            .tables
            .iter()
            .map(|t| split_of(&t.id, every))
            .collect();
        let per_split = |keep: &dyn Fn(usize, Split) -> bool, n: usize| {
            [Split::Train, Split::HeldOut].map(|split| (0..n).filter(|&i| keep(i, split)).collect())
        };
        let sampler = Sampler {
            corpus,
            config,
            tables_in: per_split(&|t, split| table_split[t] == split, table_split.len()),
            gazetteers_in: per_split(
                &|g, split| !gazetteers[g].part(split).is_empty(),
                gazetteers.len(),
            ),
            gazetteers,
            headers: corpus
                .tables
                .iter()
                .flat_map(|t| t.headers.iter().filter(|h| !h.is_empty()).cloned())
                .collect(),
        };
        let missing = |what: &str| {
            Err(TrainError::Corpus {
                path: corpus.root.clone(),
                reason: format!("the {} objective needs {what}", config.objective.name()),
            })
        };
        if config.objective.needs_teacher() && corpus.teacher.is_none() {
            return missing("teacher embeddings (teacher/)");
        }
        match config.objective {
            Objective::Gazetteer | Objective::Distill => {
                for split in [Split::Train, Split::HeldOut] {
                    if sampler.gazetteers_in[split.index()].is_empty() {
                        return missing(
                            "gazetteer entries in both its training and held-out parts",
                        );
                    }
                }
            }
            Objective::Header => {
                for split in [Split::Train, Split::HeldOut] {
                    if sampler.tables_in[split.index()].is_empty() {
                        return missing(
                            "tables in both its training and held-out parts (add tables)",
                        );
                    }
                }
            }
        }
        Ok(sampler)
    }

    /// The number of classes of the objective's output (the teacher's width for embeddings).
    pub(crate) fn outputs(&self) -> usize {
        match self.config.objective {
            Objective::Gazetteer => self.corpus.gazetteers.len(),
            _ => self.teacher().dim(),
        }
    }

    fn teacher(&self) -> &Teacher {
        self.corpus
            .teacher
            .as_ref()
            .expect("checked in Sampler::new")
    }

    /// Headers of the held-out tables that the teacher embedded, each once, sorted (the
    /// candidates of the header-retrieval score).
    pub(crate) fn held_out_headers(&self) -> Vec<String> {
        let Some(teacher) = self.corpus.teacher.as_ref() else {
            return Vec::new();
        };
        let mut headers: Vec<String> = self.tables_in[Split::HeldOut.index()]
            .iter()
            .flat_map(|&t| self.corpus.tables[t].headers.iter())
            .filter(|h| teacher.embedding(h).is_some())
            .cloned()
            .collect();
        headers.sort();
        headers.dedup();
        headers
    }

    /// Draws one synthetic table of `split` (`None` when no draw in a few attempts gave a
    /// usable table, which only a nearly empty corpus causes).
    pub(crate) fn draw(&self, rng: &mut impl Rng, split: Split, id: &str) -> Option<SynthTable> {
        (0..16).find_map(|_| match self.config.objective {
            Objective::Gazetteer => self.gazetteer_table(rng, split, id),
            Objective::Distill => self.distill_table(rng, split, id),
            Objective::Header => self.header_table(rng, split, id),
        })
    }

    fn rows(&self, rng: &mut impl Rng) -> usize {
        rng.random_range(2..=self.config.data.serialize.max_rows.max(2))
    }

    fn columns(&self, rng: &mut impl Rng) -> usize {
        rng.random_range(1..=self.config.data.max_columns)
    }

    /// A header that says nothing about the column (so a specialist learns to read cells
    /// whether or not a header comes first).
    fn decoy_header(&self, rng: &mut impl Rng) -> Option<String> {
        if rng.random_bool(0.3) {
            self.headers.choose(rng).cloned()
        } else {
            None
        }
    }

    fn gazetteer_table(&self, rng: &mut impl Rng, split: Split, id: &str) -> Option<SynthTable> {
        let rows = self.rows(rng);
        let usable = &self.gazetteers_in[split.index()];
        let mut columns = Vec::new();
        let mut targets = Vec::new();
        for _ in 0..self.columns(rng) {
            let &kind = usable.choose(rng)?;
            let cells = noisy_cells(rng, self.gazetteers[kind].part(split), rows, |rng| {
                let &other = usable.choose(rng)?;
                self.gazetteers[other].part(split).choose(rng).cloned()
            });
            columns.push(Column::new(self.decoy_header(rng), cells));
            targets.push(Target::Class(kind));
        }
        Some(SynthTable {
            table: Table::new(id, columns),
            targets,
            headers: Vec::new(),
        })
    }

    fn distill_table(&self, rng: &mut impl Rng, split: Split, id: &str) -> Option<SynthTable> {
        let teacher = self.teacher();
        // A quarter of the tables hold one string: distillation of single cells.
        let rows = if rng.random_bool(0.25) {
            1
        } else {
            self.rows(rng)
        };
        let mut columns = Vec::new();
        let mut targets = Vec::new();
        for _ in 0..self.columns(rng) {
            let texts = self.coherent_strings(rng, split, rows)?;
            let Some(target) = teacher.mean_embedding(texts.iter().map(String::as_str)) else {
                continue;
            };
            let cells = texts.into_iter().map(Cell::new).collect();
            columns.push(Column::new(self.decoy_header(rng), cells));
            targets.push(Target::Embedding(target));
        }
        (!columns.is_empty()).then(|| SynthTable {
            table: Table::new(id, columns),
            targets,
            headers: Vec::new(),
        })
    }

    /// `rows` strings of one source: a gazetteer, or a column of a corpus table.
    fn coherent_strings(
        &self,
        rng: &mut impl Rng,
        split: Split,
        rows: usize,
    ) -> Option<Vec<String>> {
        let tables = &self.tables_in[split.index()];
        if !tables.is_empty() && rng.random_bool(0.5) {
            let table = &self.corpus.tables[*tables.choose(rng)?];
            let column = table.columns.choose(rng)?;
            let texts: Vec<String> = (0..rows)
                .filter_map(|_| column.choose(rng).filter(|t| !t.trim().is_empty()).cloned())
                .collect();
            return (!texts.is_empty()).then_some(texts);
        }
        let pool = self.gazetteers[*self.gazetteers_in[split.index()].choose(rng)?].part(split);
        Some(
            (0..rows)
                .filter_map(|_| pool.choose(rng).cloned())
                .collect(),
        )
    }

    fn header_table(&self, rng: &mut impl Rng, split: Split, id: &str) -> Option<SynthTable> {
        let teacher = self.teacher();
        let table = &self.corpus.tables[*self.tables_in[split.index()].choose(rng)?];
        let n_rows = table.columns.first().map_or(0, Vec::len);
        if n_rows == 0 {
            return None;
        }
        let picked_rows: Vec<usize> = (0..self.rows(rng))
            .map(|_| rng.random_range(0..n_rows))
            .collect();
        let mut candidates: Vec<usize> = (0..table.columns.len())
            .filter(|&c| teacher.embedding(&table.headers[c]).is_some())
            .filter(|&c| {
                picked_rows
                    .iter()
                    .any(|&r| !table.columns[c][r].trim().is_empty())
            })
            .collect();
        let n = self.columns(rng).min(candidates.len());
        let (chosen, _) = candidates.partial_shuffle(rng, n);
        let mut chosen = chosen.to_vec();
        chosen.sort_unstable();
        let columns: Vec<Column> = chosen
            .iter()
            .map(|&c| {
                let cells = picked_rows
                    .iter()
                    .map(|&r| cell(&table.columns[c][r]))
                    .collect();
                Column::new(None, cells)
            })
            .collect();
        let headers: Vec<String> = chosen.iter().map(|&c| table.headers[c].clone()).collect();
        let targets = headers
            .iter()
            .map(|h| Target::Embedding(teacher.embedding(h).map(unit).unwrap_or_default()))
            .collect();
        (!columns.is_empty()).then(|| SynthTable {
            table: Table::new(id, columns),
            targets,
            headers,
        })
    }
}

fn cell(text: &str) -> Cell {
    if text.trim().is_empty() {
        Cell::null()
    } else {
        Cell::new(text)
    }
}

fn unit(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter().map(|x| x / norm).collect()
}

/// `rows` cells drawn from `pool` with the noise of real columns: a column in lower or upper
/// case, and cells that are missing, abbreviated, numbers, or of another type (`other`).
fn noisy_cells<R: Rng>(
    rng: &mut R,
    pool: &[String],
    rows: usize,
    mut other: impl FnMut(&mut R) -> Option<String>,
) -> Vec<Cell> {
    let casing = rng.random_range(0..10u8);
    (0..rows)
        .map(|_| {
            let roll: f64 = rng.random();
            let text = if roll < 0.08 {
                return Cell::null();
            } else if roll < 0.12 {
                number(rng)
            } else if roll < 0.16 {
                other(rng).unwrap_or_default()
            } else {
                let entry = pool.choose(rng).cloned().unwrap_or_default();
                if roll < 0.22 {
                    abbreviate(&entry, rng)
                } else {
                    entry
                }
            };
            let text = match casing {
                0 | 1 => text.to_lowercase(),
                2 => text.to_uppercase(),
                _ => text,
            };
            cell(&text)
        })
        .collect()
}

fn number(rng: &mut impl Rng) -> String {
    match rng.random_range(0..3u8) {
        0 => rng.random_range(0..10_000u32).to_string(),
        1 => format!("{:.2}", rng.random_range(-1000.0..1000.0f64)),
        _ => rng.random_range(1900..2030u32).to_string(),
    }
}

/// A shortened form: initials, a truncated word with a period, or the first word.
fn abbreviate(text: &str, rng: &mut impl Rng) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    match rng.random_range(0..3u8) {
        0 if words.len() > 1 => words.iter().filter_map(|w| w.chars().next()).collect(),
        1 => {
            let short: String = text.chars().take(4).collect();
            if short.chars().count() < text.chars().count() {
                format!("{short}.")
            } else {
                short
            }
        }
        _ => words.first().map_or_else(String::new, |w| (*w).to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn the_split_is_a_fixed_function_of_the_text() {
        let pool = SplitPool::of((0..2000).map(|i| format!("entry {i}")), 10);
        let held = pool.held_out.len();
        assert!((100..300).contains(&held), "{held} held out of 2000");
        let again = SplitPool::of((0..2000).map(|i| format!("entry {i}")), 10);
        assert_eq!(again.held_out, pool.held_out);
        assert!(pool.train.iter().all(|s| !pool.held_out.contains(s)));
    }

    #[test]
    fn abbreviations_are_shorter_or_equal() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for text in ["New York City", "Paris", "Ouagadougou", "X"] {
            for _ in 0..20 {
                let short = abbreviate(text, &mut rng);
                assert!(
                    short.chars().count() <= text.chars().count() + 1,
                    "{text} -> {short}"
                );
            }
        }
    }

    #[test]
    fn noisy_cells_keep_the_row_count_and_mostly_the_pool() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let pool: Vec<String> = ["Lisbon", "Porto", "Braga"].map(String::from).to_vec();
        let cells = noisy_cells(&mut rng, &pool, 400, |_| Some("Intruder".into()));
        assert_eq!(cells.len(), 400);
        let from_pool = cells
            .iter()
            .filter(|c| pool.iter().any(|p| p.eq_ignore_ascii_case(c.text())))
            .count();
        assert!(
            from_pool > 250 && from_pool < 400,
            "{from_pool} of 400 from the pool"
        );
    }
}
