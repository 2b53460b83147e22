//! The subject column: the column whose cells name the entities the table is about (`city` in a
//! table of cities), from which relations (CPA) are read and which the label-name prior may
//! leave out.

use std::collections::HashSet;

use colswarm_tables::{CellCounts, Column, Table};
use serde::{Deserialize, Serialize};

use crate::decode::namespace_probs;
use crate::model::Model;
use crate::prediction::Outputs;

/// Share of a subject column's non-empty cells that must be distinct (compared in lower case):
/// a column that repeats its values (`Canada`, `Canada`, …) describes the entities, it does not
/// name them.
pub const SUBJECT_MIN_DISTINCT: f64 = 0.7;

/// Mean length in characters a subject column's non-empty cells must reach: shorter ones are
/// codes (`cak`, `AAPL`) beside the names they abbreviate.
pub const SUBJECT_MIN_MEAN_CHARS: f64 = 4.0;

/// The subject column: the table's own when it names one, else [`detected_subject_column`].
pub fn subject_column(table: &Table) -> usize {
    table
        .subject_column
        .unwrap_or_else(|| detected_subject_column(table))
}

/// The subject column as found from the cells alone, whatever key the table names: the first
/// column whose non-empty cells are mostly text, at least [`SUBJECT_MIN_DISTINCT`] of them
/// distinct and [`SUBJECT_MIN_MEAN_CHARS`] long on average; else the first column whose
/// non-empty cells are mostly not numbers; else column 0.
///
/// A benchmark's annotated key is gold a user's table does not have, so types are scored with
/// this column. On T2D's 632 tables with an annotated key, read from their files as `annotate`
/// reads them, it finds the key in 551 (552 when the rule was chosen), against 512 then for
/// the first mostly-not-numbers column alone (the two thresholds were chosen on half of those
/// tables and kept the gain on the other half).
pub fn detected_subject_column(table: &Table) -> usize {
    let mut mostly_not_numbers = None;
    for (index, column) in table.columns.iter().enumerate() {
        let counts = column.cell_counts();
        if names_entities(column, counts) {
            return index;
        }
        if mostly_not_numbers.is_none()
            && counts.filled > 0
            && 2 * (counts.filled - counts.numbers) > counts.filled
        {
            mostly_not_numbers = Some(index);
        }
    }
    mostly_not_numbers.unwrap_or(0)
}

/// Whether a column's non-empty cells are mostly text, mostly distinct and longer than codes.
/// Only a mostly-text column's cells are compared, so number columns cost one pass of counts.
fn names_entities(column: &Column, counts: CellCounts) -> bool {
    if counts.filled == 0 || 2 * counts.text <= counts.filled {
        return false;
    }
    let filled = counts.filled as f64;
    let values = || {
        column
            .cells
            .iter()
            .filter(|c| !c.is_null())
            .map(|c| c.text().trim())
    };
    let chars: usize = values().map(|v| v.chars().count()).sum();
    if (chars as f64) < SUBJECT_MIN_MEAN_CHARS * filled {
        return false;
    }
    let distinct = values()
        .map(str::to_lowercase)
        .collect::<HashSet<_>>()
        .len();
    distinct as f64 >= SUBJECT_MIN_DISTINCT * filled
}

/// A CTA label that a namespace gives subject columns (T2D types every key column
/// `rdf-schema#label`), with which the model's own probabilities may find a table's subject
/// column where the cell rule ([`detected_subject_column`]) misses it. Set by `colswarm
/// calibrate --subject-label`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubjectLabel {
    /// The label, one of the namespace's.
    pub label: String,
    /// How much more probable of `label` another column must be than the rule's column to
    /// become the subject column instead ([`subject_by_label`]).
    pub margin: f32,
}

/// The subject column that each column's probability of a subject label chooses over the cell
/// rule's `rule` column: the most probable column (the first of equals), where its probability
/// exceeds `rule`'s by more than `margin`; else `rule`.
///
/// # Shapes
/// - `probs`: `[columns]`
///
/// ```
/// use colswarm_model::subject_by_label;
///
/// assert_eq!(subject_by_label(0, &[0.1, 0.9, 0.2], 0.5), 1);
/// assert_eq!(subject_by_label(0, &[0.5, 0.9, 0.2], 0.5), 0);
/// ```
pub fn subject_by_label(rule: usize, probs: &[f32], margin: f32) -> usize {
    let Some(best) = (0..probs.len()).reduce(|a, b| if probs[b] > probs[a] { b } else { a }) else {
        return rule;
    };
    let at_rule = probs.get(rule).copied().unwrap_or(0.0);
    if probs[best] - at_rule > margin {
        best
    } else {
        rule
    }
}

impl Model {
    /// The CTA namespace with a [`SubjectLabel`] (the first), the label's head output and
    /// its margin: `None` where the cell rule alone finds subject columns.
    pub fn subject_label(&self) -> Option<(usize, usize, f32)> {
        self.space.cta.iter().enumerate().find_map(|(i, n)| {
            let chosen = n.subject_label.as_ref()?;
            Some((i, n.output(&chosen.label)?, chosen.margin))
        })
    }

    /// Table `b`'s subject column as the model finds it from a pass over its `columns` columns
    /// read from the cell rule's `rule` column: [`subject_by_label`] on each column's
    /// probability of the model's [`SubjectLabel`] (before any prior, experts mixed in);
    /// `rule` without one.
    pub fn found_subject(&self, outputs: &Outputs, b: usize, columns: usize, rule: usize) -> usize {
        let Some((namespace, output, margin)) = self.subject_label() else {
            return rule;
        };
        let ns = &self.space.cta[namespace];
        let at = output - ns.offset;
        let start = outputs.row_start[b];
        let probs: Vec<f32> = (start..start + columns)
            .map(|row| namespace_probs(ns, &outputs.cta[row], None)[at])
            .collect();
        subject_by_label(rule, &probs, margin)
    }
}

/// A subject column a user names for their tables: by header or by index.
///
/// ```
/// use colswarm_model::SubjectColumn;
/// use colswarm_tables::Table;
///
/// let named: SubjectColumn = "Name".parse().unwrap();
/// let mut table = Table::from_rows(
///     "staff",
///     Some(vec!["id".into(), "name".into()]),
///     vec![vec!["1".into(), "Ada".into()]],
/// );
/// assert!(named.set_in(&mut table));
/// assert_eq!(table.subject_column, Some(1));
/// assert!(!"7".parse::<SubjectColumn>().unwrap().set_in(&mut table));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubjectColumn {
    /// The column at this 0-based index.
    Index(usize),
    /// The first column whose header equals this one, ignoring case and surrounding space.
    Header(String),
}

impl std::str::FromStr for SubjectColumn {
    type Err = std::convert::Infallible;

    /// A number is an index; anything else a header.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text.trim().parse() {
            Ok(index) => SubjectColumn::Index(index),
            Err(_) => SubjectColumn::Header(text.to_string()),
        })
    }
}

impl std::fmt::Display for SubjectColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SubjectColumn::Index(index) => write!(f, "column {index}"),
            SubjectColumn::Header(header) => write!(f, "column headed `{header}`"),
        }
    }
}

impl SubjectColumn {
    /// The named column's index in `table`, if it has one.
    pub fn find(&self, table: &Table) -> Option<usize> {
        match self {
            SubjectColumn::Index(index) => (*index < table.n_columns()).then_some(*index),
            SubjectColumn::Header(header) => {
                let wanted = header.trim().to_lowercase();
                table.columns.iter().position(|c| {
                    c.header
                        .as_deref()
                        .is_some_and(|h| h.trim().to_lowercase() == wanted)
                })
            }
        }
    }

    /// Makes the named column `table`'s subject column ([`subject_column`] then returns it);
    /// false, the table unchanged, where the table has no such column.
    pub fn set_in(&self, table: &mut Table) -> bool {
        let found = self.find(table);
        if found.is_some() {
            table.subject_column = found;
        }
        found.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[&[&str]]) -> Table {
        Table::from_rows(
            "t",
            None,
            rows.iter()
                .map(|r| r.iter().map(|c| c.to_string()).collect())
                .collect(),
        )
    }

    #[test]
    fn the_first_column_of_distinct_names_is_the_subject() {
        let t = table(&[&["1", "Paris", "France"], &["2", "Rome", "Italy"]]);
        assert_eq!(detected_subject_column(&t), 1);
    }

    #[test]
    fn codes_and_repeated_values_give_way_to_the_names_beside_them() {
        // Airport codes, then a country that repeats, then the airports' names.
        let t = table(&[
            &["cak", "Algeria", "Akron-Canton Airport"],
            &["alb", "Algeria", "Albany International"],
            &["tlm", "Algeria", "Tlemcen Zenata"],
        ]);
        assert_eq!(detected_subject_column(&t), 2);
    }

    #[test]
    fn dates_are_not_names() {
        let t = table(&[
            &["2011-08-24", "Webroot Spysweeper"],
            &["2011-08-20", "Norton Antivirus"],
        ]);
        assert_eq!(detected_subject_column(&t), 1);
    }

    #[test]
    fn without_names_the_first_mostly_text_column_then_column_0() {
        let repeated = table(&[&["1", "ab", "x"], &["2", "ab", "y"], &["3", "ab", "x"]]);
        assert_eq!(detected_subject_column(&repeated), 1);
        let numbers = table(&[&["1", "2.5"], &["2", "3.5"]]);
        assert_eq!(detected_subject_column(&numbers), 0);
        assert_eq!(detected_subject_column(&Table::new("empty", vec![])), 0);
    }

    #[test]
    fn a_subject_column_is_named_by_header_or_index() {
        let mut t = Table::from_rows(
            "t",
            Some(vec!["Code".into(), " Airport Name ".into()]),
            vec![vec!["cak".into(), "Akron-Canton".into()]],
        );
        let header: SubjectColumn = "airport name".parse().unwrap();
        assert_eq!(header, SubjectColumn::Header("airport name".into()));
        assert_eq!(header.find(&t), Some(1));
        let index: SubjectColumn = " 0 ".parse().unwrap();
        assert_eq!(index, SubjectColumn::Index(0));
        assert!(index.set_in(&mut t));
        assert_eq!(subject_column(&t), 0);
        // A table without the column keeps what it had.
        for missing in ["city", "2"] {
            assert!(!missing.parse::<SubjectColumn>().unwrap().set_in(&mut t));
            assert_eq!(t.subject_column, Some(0));
        }
    }

    #[test]
    fn a_named_key_is_the_subject_column_but_not_the_detected_one() {
        let mut t = table(&[&["Paris", "France"], &["Rome", "Italy"]]);
        t.subject_column = Some(1);
        assert_eq!(subject_column(&t), 1);
        assert_eq!(detected_subject_column(&t), 0);
    }

    #[test]
    fn a_margin_decides_whether_the_most_probable_column_replaces_the_rule_s() {
        assert_eq!(subject_by_label(2, &[0.1, 0.8, 0.2], 0.5), 1);
        assert_eq!(subject_by_label(2, &[0.1, 0.8, 0.4], 0.5), 2);
        // Equals: the first; none: the rule's.
        assert_eq!(subject_by_label(2, &[0.9, 0.9, 0.1], 0.5), 0);
        assert_eq!(subject_by_label(1, &[], -1.0), 1);
        assert_eq!(subject_by_label(0, &[0.3, 0.3], -1.0), 0);
    }

    /// On the shipped model's sample tables: with a subject label, each table's subject column
    /// is the column whose softmax of the `t2d` logits (computed here from a pass read from
    /// the rule's columns) gives the label most, and its relations are those a pass read from
    /// that column gives.
    #[test]
    fn annotate_reads_relations_from_the_column_the_subject_label_finds() {
        use crate::annotation::AnnotateOptions;
        use crate::encode::Columns;
        use crate::model::SpecialistUse;
        use burn::tensor::Device;

        const LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
        let mut model = Model::load(
            std::path::Path::new(&format!("{root}models/colswarm-small")),
            &Device::default(),
        )
        .unwrap();
        let samples = std::path::PathBuf::from(format!("{root}datasets/t2d-webtables/samples"));
        let mut tables: Vec<Table> = crate::read::table_files(&[samples])
            .unwrap()
            .iter()
            .map(|f| crate::read::read_table(f).unwrap())
            .collect();
        // Each with its columns reversed too: the rule takes the first column of names from
        // the left, so there it often finds another one than the model's label does.
        let reversed: Vec<Table> = tables
            .iter()
            .map(|t| {
                let mut r = t.clone();
                r.id = format!("{}-reversed", t.id);
                r.columns.reverse();
                r
            })
            .collect();
        tables.extend(reversed);
        let t2d = model
            .space
            .cta
            .iter()
            .position(|n| n.name == "t2d")
            .unwrap();
        let ns = model.space.cta[t2d].clone();
        let at = ns.output(LABEL).unwrap();
        let options = AnnotateOptions {
            cpa_namespaces: vec!["t2d".into()],
            ..AnnotateOptions::default()
        };
        model.space.cta[t2d].subject_label = None;
        let ruled = model.annotate(&tables, &options).unwrap();
        model.space.cta[t2d].subject_label = Some(SubjectLabel {
            label: LABEL.into(),
            margin: -1.0,
        });
        let found = model.annotate(&tables, &options).unwrap();
        let mut moved = 0;
        for (i, table) in tables.iter().enumerate() {
            let rule = detected_subject_column(table);
            assert_eq!(ruled[i].subject_column, rule, "{}", table.id);
            let examples = model.encode(std::slice::from_ref(table), Columns::All);
            let refs: Vec<&_> = examples.iter().collect();
            let outputs = model
                .predict(&refs, &[rule], SpecialistUse::Router)
                .unwrap();
            let label_probs: Vec<f32> = outputs
                .cta
                .iter()
                .take(table.n_columns())
                .map(|row| {
                    let own = &row[ns.range()];
                    let max = own.iter().copied().fold(f32::MIN, f32::max);
                    let sum: f32 = own.iter().map(|x| (x - max).exp()).sum();
                    (row[at] - max).exp() / sum
                })
                .collect();
            let mut expected = 0;
            for (c, p) in label_probs.iter().enumerate() {
                if *p > label_probs[expected] {
                    expected = c;
                }
            }
            let annotation = &found[i];
            assert_eq!(annotation.subject_column, expected, "{}", table.id);
            moved += usize::from(expected != rule);
            // Its relations: from a pass read from the found column.
            let again = model
                .predict(&refs, &[expected], SpecialistUse::Router)
                .unwrap();
            let mut starts = Vec::new();
            for column in &annotation.columns {
                for relation in &column.relations {
                    starts.push(relation.subject_column);
                }
            }
            assert!(starts.iter().all(|&s| s == expected), "{}", table.id);
            assert_eq!(starts.len(), again.cpa[0].len(), "{}", table.id);
        }
        assert!(
            moved > 0,
            "no sample table moved: the test would prove nothing"
        );
    }
}
