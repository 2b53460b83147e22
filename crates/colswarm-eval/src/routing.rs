//! How the router routes: for each specialist, the share of tables it was opened on, overall
//! and by kind of table ([`TableKind`]), accumulated table by table into a [`RoutingReport`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use colswarm_model::{Model, Outputs};
use colswarm_tables::{Column, Table};

/// Columns from which a table also counts as [`TableKind::Wide`].
pub const WIDE_COLUMNS: usize = 8;

/// A coarse kind of table, read from its cells' kinds ([`Column::cell_counts`]); cheap, no
/// model.
///
/// A column is *textual* when more than half of its non-missing cells are free text
/// (`CellKind::Text`), *numeric* when more than half of them are numbers or dates; a column
/// with no non-missing cell is neither.
/// A table is then exactly one of:
///
/// - [`Entity`](TableKind::Entity): more than half of its columns are textual (lists of
///   names, titles, places);
/// - [`Numeric`](TableKind::Numeric): more than half of its columns are numeric (statistics,
///   time series);
/// - [`Mixed`](TableKind::Mixed): neither (including a table without columns);
///
/// and, besides, [`Wide`](TableKind::Wide) when it has at least [`WIDE_COLUMNS`] (8) columns.
/// [`TableKind::kinds`] gives both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TableKind {
    /// Most columns mostly text.
    Entity,
    /// Most columns mostly numbers or dates.
    Numeric,
    /// Neither entity nor numeric.
    Mixed,
    /// At least [`WIDE_COLUMNS`] columns, whatever its cells (orthogonal to the three others).
    Wide,
}

impl TableKind {
    /// Every kind, in report order.
    pub const ALL: [TableKind; 4] = [
        TableKind::Entity,
        TableKind::Numeric,
        TableKind::Mixed,
        TableKind::Wide,
    ];

    /// The lower-case name (as serialized).
    pub fn name(self) -> &'static str {
        match self {
            TableKind::Entity => "entity",
            TableKind::Numeric => "numeric",
            TableKind::Mixed => "mixed",
            TableKind::Wide => "wide",
        }
    }

    /// The table's one kind among entity, numeric and mixed.
    pub fn of(table: &Table) -> TableKind {
        let (mut textual, mut numeric) = (0, 0);
        for column in &table.columns {
            match column_kind(column) {
                Some(ColumnKind::Textual) => textual += 1,
                Some(ColumnKind::Numeric) => numeric += 1,
                None => {}
            }
        }
        let n = table.n_columns();
        if 2 * textual > n {
            TableKind::Entity
        } else if 2 * numeric > n {
            TableKind::Numeric
        } else {
            TableKind::Mixed
        }
    }

    /// Every kind the table counts in: [`TableKind::of`], then [`TableKind::Wide`] when it has
    /// at least [`WIDE_COLUMNS`] columns.
    pub fn kinds(table: &Table) -> Vec<TableKind> {
        let mut kinds = vec![TableKind::of(table)];
        if table.n_columns() >= WIDE_COLUMNS {
            kinds.push(TableKind::Wide);
        }
        kinds
    }
}

impl std::fmt::Display for TableKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

enum ColumnKind {
    Textual,
    Numeric,
}

/// What most of a column's non-missing cells are, if text or numbers/dates.
fn column_kind(column: &Column) -> Option<ColumnKind> {
    let counts = column.cell_counts();
    if 2 * counts.text > counts.filled {
        Some(ColumnKind::Textual)
    } else if 2 * (counts.numbers + counts.dates) > counts.filled {
        Some(ColumnKind::Numeric)
    } else {
        None
    }
}

/// How often a specialist was opened on some tables.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Tables it was opened on.
    pub opened: usize,
    /// Tables it was gated on.
    pub tables: usize,
    /// `opened / tables` (0 without tables).
    pub rate: f64,
}

impl Rate {
    fn count(&mut self, opened: bool) {
        self.tables += 1;
        self.opened += usize::from(opened);
        self.rate = self.opened as f64 / self.tables as f64;
    }
}

/// One specialist's routing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpecialistRouting {
    /// The specialist's name.
    pub name: String,
    /// Over every table.
    pub overall: Rate,
    /// Per kind of table it was gated on ([`TableKind::kinds`]).
    pub by_kind: BTreeMap<TableKind, Rate>,
}

/// For each specialist, the share of tables the router opened it on, overall and per
/// [`TableKind`]; built table by table with [`RoutingReport::add`]. Empty when no specialist
/// was gated (a model without specialists, or the primary alone).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoutingReport {
    /// Tables counted.
    pub tables: usize,
    /// Tables counted per kind (entity, numeric and mixed sum to `tables`; wide ones are also
    /// in one of those).
    pub tables_by_kind: BTreeMap<TableKind, usize>,
    /// Specialists in the order first seen (the router's order).
    pub specialists: Vec<SpecialistRouting>,
}

impl RoutingReport {
    /// Counts the tables of one forward pass of `model` with the gates `outputs` reports.
    pub fn add_pass(&mut self, model: &Model, tables: &[&Table], outputs: &Outputs) {
        for (table, row) in tables.iter().zip(&outputs.gates) {
            let opened = row.iter().map(|&(_, opened)| opened);
            self.add(table, model.gate_names().zip(opened));
        }
    }

    /// Counts one table with its gates: each specialist's name and whether it was opened. A
    /// table without gates is not counted.
    pub fn add<'a>(&mut self, table: &Table, gates: impl IntoIterator<Item = (&'a str, bool)>) {
        let gates: Vec<(&str, bool)> = gates.into_iter().collect();
        if gates.is_empty() {
            return;
        }
        let kinds = TableKind::kinds(table);
        self.tables += 1;
        for &kind in &kinds {
            *self.tables_by_kind.entry(kind).or_default() += 1;
        }
        for (name, opened) in gates {
            let i = match self.specialists.iter().position(|s| s.name == name) {
                Some(i) => i,
                None => {
                    self.specialists.push(SpecialistRouting {
                        name: name.to_string(),
                        overall: Rate::default(),
                        by_kind: BTreeMap::new(),
                    });
                    self.specialists.len() - 1
                }
            };
            let specialist = &mut self.specialists[i];
            specialist.overall.count(opened);
            for &kind in &kinds {
                specialist.by_kind.entry(kind).or_default().count(opened);
            }
        }
    }

    /// The share of (table, specialist) pairs opened, over every specialist and table (0
    /// when empty).
    pub fn activation_rate(&self) -> f64 {
        let (opened, gated) = self.specialists.iter().fold((0, 0), |(o, g), s| {
            (o + s.overall.opened, g + s.overall.tables)
        });
        if gated == 0 {
            0.0
        } else {
            opened as f64 / gated as f64
        }
    }

    /// True when no table was counted.
    pub fn is_empty(&self) -> bool {
        self.specialists.is_empty()
    }

    /// A text table: a header naming the kinds seen with their table counts, then one line per
    /// specialist with the percentage of tables it was opened on, overall and per kind (`-`
    /// where it saw no table of that kind). Nothing when empty.
    pub fn lines(&self) -> Vec<String> {
        if self.is_empty() {
            return Vec::new();
        }
        let kinds: Vec<TableKind> = TableKind::ALL
            .into_iter()
            .filter(|k| self.tables_by_kind.contains_key(k))
            .collect();
        let width = self
            .specialists
            .iter()
            .map(|s| s.name.chars().count())
            .chain(["specialist".len()])
            .max()
            .unwrap_or(0);
        let mut headers = vec![format!("all ({})", self.tables)];
        headers.extend(
            kinds
                .iter()
                .map(|k| format!("{k} ({})", self.tables_by_kind[k])),
        );
        let widths: Vec<usize> = headers.iter().map(|h| h.len().max(4)).collect();
        let row = |name: &str, cells: Vec<String>| {
            let mut line = format!("{name:<width$}");
            for (cell, w) in cells.iter().zip(&widths) {
                line.push_str(&format!("  {cell:>w$}"));
            }
            line
        };
        let percent = |rate: Option<&Rate>| {
            rate.map_or_else(|| "-".to_string(), |r| format!("{:.0}%", 100.0 * r.rate))
        };
        let mut lines = vec![
            "tables each specialist was opened on (tables per kind in parentheses):".to_string(),
            row("specialist", headers.clone()),
        ];
        for s in &self.specialists {
            let mut cells = vec![percent(Some(&s.overall))];
            cells.extend(kinds.iter().map(|k| percent(s.by_kind.get(k))));
            lines.push(row(&s.name, cells));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(headers: &[&str], rows: &[&[&str]]) -> Table {
        Table::from_rows(
            "t",
            Some(headers.iter().map(|h| h.to_string()).collect()),
            rows.iter()
                .map(|r| r.iter().map(|c| c.to_string()).collect())
                .collect(),
        )
    }

    fn names() -> Table {
        table(
            &["name", "city", "born"],
            &[
                &["Ada Lovelace", "London", "1815"],
                &["Alan Turing", "London", "1912"],
                &["Grace Hopper", "New York", ""],
            ],
        )
    }

    fn numbers() -> Table {
        table(
            &["year", "population", "area", "country"],
            &[
                &["2020-01-01", "1,234,567", "12.5", "France"],
                &["2021-01-01", "1,240,000", "12.5", "France"],
                &["2022-01-01", "N/A", "-3e2", "France"],
            ],
        )
    }

    fn wide() -> Table {
        let headers: Vec<String> = (0..9).map(|i| format!("c{i}")).collect();
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        table(
            &headers,
            &[
                &["a", "b", "1", "2", "3", "4", "true", "", "x"],
                &["c", "d", "5", "6", "7", "8", "false", "", "y"],
            ],
        )
    }

    #[test]
    fn tables_are_classified_by_their_cells() {
        assert_eq!(TableKind::kinds(&names()), [TableKind::Entity]);
        assert_eq!(TableKind::kinds(&numbers()), [TableKind::Numeric]);
        // 3 textual, 4 numeric, a boolean and an empty column of 9: no majority, and wide.
        assert_eq!(
            TableKind::kinds(&wide()),
            [TableKind::Mixed, TableKind::Wide]
        );
        // Half and half is no majority.
        let even = table(&["name", "n"], &[&["Oslo", "1"], &["Lyon", "2"]]);
        assert_eq!(TableKind::of(&even), TableKind::Mixed);
        assert_eq!(
            TableKind::of(&Table::new("empty", Vec::new())),
            TableKind::Mixed
        );
        // Exactly eight columns is wide.
        let headers: Vec<String> = (0..WIDE_COLUMNS).map(|i| format!("c{i}")).collect();
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        let row = ["Oslo"; WIDE_COLUMNS];
        assert_eq!(
            TableKind::kinds(&table(&headers, &[&row])),
            [TableKind::Entity, TableKind::Wide]
        );
    }

    #[test]
    fn rates_count_tables_per_specialist_and_kind_in_first_seen_order() {
        let mut report = RoutingReport::default();
        report.add(&names(), [("b", true), ("a", false)]);
        report.add(&names(), [("b", true), ("a", true)]);
        report.add(&numbers(), [("b", false), ("a", true)]);
        report.add(&wide(), [("b", true), ("a", false), ("c", true)]);
        // No gates (the primary alone): not counted.
        report.add(&numbers(), []);

        assert_eq!(report.tables, 4);
        let by_kind: Vec<(&str, usize)> = report
            .tables_by_kind
            .iter()
            .map(|(k, &n)| (k.name(), n))
            .collect();
        assert_eq!(
            by_kind,
            [("entity", 2), ("numeric", 1), ("mixed", 1), ("wide", 1)]
        );
        let names: Vec<&str> = report.specialists.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["b", "a", "c"]);

        let rate = |name: &str, kind: Option<TableKind>| {
            let s = report.specialists.iter().find(|s| s.name == name).unwrap();
            let r = kind.map_or(&s.overall, |k| &s.by_kind[&k]);
            (r.opened, r.tables, r.rate)
        };
        assert_eq!(rate("b", None), (3, 4, 0.75));
        assert_eq!(rate("a", None), (2, 4, 0.5));
        assert_eq!(rate("c", None), (1, 1, 1.0));
        assert_eq!(rate("b", Some(TableKind::Entity)), (2, 2, 1.0));
        assert_eq!(rate("a", Some(TableKind::Entity)), (1, 2, 0.5));
        assert_eq!(rate("b", Some(TableKind::Numeric)), (0, 1, 0.0));
        assert_eq!(rate("a", Some(TableKind::Wide)), (0, 1, 0.0));
        // 6 of the 9 (table, specialist) pairs gated were opened.
        assert!((report.activation_rate() - 6.0 / 9.0).abs() < 1e-12);
        assert_eq!(RoutingReport::default().activation_rate(), 0.0);
        assert_eq!(rate("c", Some(TableKind::Mixed)), (1, 1, 1.0));
        // `c` saw only the wide table.
        assert!(
            !report.specialists[2]
                .by_kind
                .contains_key(&TableKind::Entity)
        );
    }

    #[test]
    fn the_report_round_trips_through_json_with_lower_case_kinds() {
        let mut report = RoutingReport::default();
        report.add(&names(), [("t2d", true)]);
        report.add(&wide(), [("t2d", false)]);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["tables_by_kind"]["entity"], 1);
        assert_eq!(json["tables_by_kind"]["wide"], 1);
        assert_eq!(json["specialists"][0]["by_kind"]["mixed"]["tables"], 1);
        assert_eq!(json["specialists"][0]["overall"]["rate"], 0.5);
        let back: RoutingReport = serde_json::from_value(json).unwrap();
        assert_eq!(back, report);
    }

    #[test]
    fn the_text_table_has_a_line_per_specialist_and_a_column_per_kind_seen() {
        assert!(RoutingReport::default().lines().is_empty());
        let mut report = RoutingReport::default();
        report.add(&names(), [("knowledge", true), ("t2d", false)]);
        report.add(&names(), [("knowledge", false), ("t2d", false)]);
        report.add(&numbers(), [("knowledge", true), ("t2d", true)]);
        report.add(&numbers(), [("late", true)]);
        let lines = report.lines();
        assert_eq!(lines.len(), 5, "{lines:#?}");
        let words = |line: &str| {
            line.split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            words(&lines[1]),
            [
                "specialist",
                "all",
                "(4)",
                "entity",
                "(2)",
                "numeric",
                "(2)"
            ]
        );
        assert_eq!(words(&lines[2]), ["knowledge", "67%", "50%", "100%"]);
        assert_eq!(words(&lines[3]), ["t2d", "33%", "0%", "100%"]);
        assert_eq!(words(&lines[4]), ["late", "100%", "-", "100%"]);
        // The columns line up.
        let ends = |line: &str| line.match_indices('%').map(|(i, _)| i).collect::<Vec<_>>();
        assert_eq!(ends(&lines[2]), ends(&lines[3]));
    }
}
