//! The table model: a [`Table`] is a list of [`Column`]s plus its [`TableContext`], its
//! column-property targets ([`CpaTarget`]) and, where a dataset has them, a subject column and
//! a table-level class.

use crate::cell::{Cell, CellKind};

/// Context a source format keeps around a table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableContext {
    /// Title of the page the table comes from (WikiTables).
    pub page_title: Option<String>,
    /// Section the table sits in (WikiTables).
    pub section_title: Option<String>,
    /// The table's caption (TURL JSON).
    pub caption: Option<String>,
    /// True when the source had a real header row (CSV with header, T2D, TURL). False for
    /// SOTAB and the Sato/Doduo cv files, whose headers are absent by design: no header is
    /// ever made up.
    pub has_header_row: bool,
    /// True when the reader transposed the source (T2D "vertical" tables, whose attribute
    /// names run down the first column).
    pub transposed: bool,
}

/// One column: an optional header, its cells in row order, and its CTA labels.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Column {
    /// The header text, when the source has one.
    pub header: Option<String>,
    /// Cells in row order. Columns of one table normally have equal length; sources that do
    /// not keep rows aligned (Sato/Doduo cv files) can give columns of different lengths.
    pub cells: Vec<Cell>,
    /// CTA labels (several for multi-label sets such as WikiTables); empty when the column is
    /// not labelled (it still serves as context).
    pub labels: Vec<String>,
    /// The column's index in the source file when it differs from its position here (the
    /// Sato/Doduo cv files skip some column indices; their columns are kept compact).
    pub source_index: Option<usize>,
}

impl Column {
    /// A column with the given header and cells and no labels.
    pub fn new(header: Option<String>, cells: Vec<Cell>) -> Self {
        Column {
            header,
            cells,
            labels: Vec::new(),
            source_index: None,
        }
    }

    /// True when the column has at least one CTA label.
    pub fn is_labelled(&self) -> bool {
        !self.labels.is_empty()
    }

    /// How many of the column's cells are of each kind, missing ones left out: the one count
    /// behind [`Column::is_quantity`] and the routing report's column kinds.
    pub fn cell_counts(&self) -> CellCounts {
        let mut counts = CellCounts::default();
        for cell in self.cells.iter().filter(|c| !c.is_null()) {
            counts.filled += 1;
            match cell.kind() {
                CellKind::Text => counts.text += 1,
                CellKind::Date => counts.dates += 1,
                _ if cell.is_numeric() => {
                    counts.numbers += 1;
                    let year = cell.text().trim().parse::<u32>();
                    if year.is_ok_and(|y| (1000..=2100).contains(&y)) {
                        counts.years += 1;
                    }
                }
                _ => {}
            }
        }
        counts
    }

    /// True when more than half of the column's non-missing cells are numbers
    /// ([`Cell::is_numeric`]) and at most half of them are years (integers from 1000 to 2100):
    /// a column of amounts, counts or measurements rather than of things. Year columns are left
    /// out because entity-type label sets give them types (WikiTables links a year to the
    /// year's ceremony or season).
    pub fn is_quantity(&self) -> bool {
        let counts = self.cell_counts();
        2 * counts.numbers > counts.filled && 2 * counts.years <= counts.filled
    }
}

/// How many of a column's non-missing cells are of each kind ([`Column::cell_counts`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CellCounts {
    /// Non-missing cells.
    pub filled: usize,
    /// Free text ([`CellKind::Text`]).
    pub text: usize,
    /// Integers and decimals ([`Cell::is_numeric`]).
    pub numbers: usize,
    /// Integers from 1000 to 2100, counted among `numbers` too.
    pub years: usize,
    /// Dates ([`CellKind::Date`]).
    pub dates: usize,
}

/// A column-property (CPA) target: the relation between the subject column and another
/// column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpaTarget {
    /// Index of the subject (main, key) column.
    pub subject_column: usize,
    /// Index of the object column.
    pub object_column: usize,
    /// Accepted relation labels (one for SOTAB and T2D, several for TURL).
    pub labels: Vec<String>,
}

/// A table with its annotations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    /// Identifier unique within its dataset (file name or dataset id).
    pub id: String,
    /// Title, section, header presence.
    pub context: TableContext,
    /// The columns, in source order.
    pub columns: Vec<Column>,
    /// CPA targets (empty when the dataset has none).
    pub cpa_targets: Vec<CpaTarget>,
    /// The subject (key) column, when the dataset names one.
    pub subject_column: Option<usize>,
    /// A table-level class (T2D class label, SOTAB domain), when the dataset has one.
    pub table_class: Option<String>,
}

impl Table {
    /// A table with the given id and columns and no annotations.
    pub fn new(id: impl Into<String>, columns: Vec<Column>) -> Self {
        Table {
            id: id.into(),
            columns,
            ..Table::default()
        }
    }

    /// Number of columns.
    pub fn n_columns(&self) -> usize {
        self.columns.len()
    }

    /// Number of rows: the length of the longest column.
    pub fn n_rows(&self) -> usize {
        self.columns
            .iter()
            .map(|c| c.cells.len())
            .max()
            .unwrap_or(0)
    }

    /// The cell at (row, column), if present.
    pub fn cell(&self, row: usize, column: usize) -> Option<&Cell> {
        self.columns.get(column)?.cells.get(row)
    }

    /// Number of columns with at least one CTA label.
    pub fn n_labelled_columns(&self) -> usize {
        self.columns.iter().filter(|c| c.is_labelled()).count()
    }

    /// Builds a table from rows of text; `header` names the columns when present. Rows shorter
    /// than the widest row are padded with null cells.
    pub fn from_rows(
        id: impl Into<String>,
        header: Option<Vec<String>>,
        rows: Vec<Vec<String>>,
    ) -> Self {
        let width = rows
            .iter()
            .map(Vec::len)
            .chain(header.as_ref().map(Vec::len))
            .max()
            .unwrap_or(0);
        let mut columns: Vec<Column> = (0..width)
            .map(|i| {
                let name = header.as_ref().and_then(|h| h.get(i).cloned());
                Column::new(name, Vec::with_capacity(rows.len()))
            })
            .collect();
        for row in rows {
            let filled = row.len();
            for (column, text) in columns.iter_mut().zip(row) {
                column.cells.push(Cell::new(text));
            }
            for column in &mut columns[filled..] {
                column.cells.push(Cell::null());
            }
        }
        let has_header_row = header.is_some();
        let mut table = Table::new(id, columns);
        table.context.has_header_row = has_header_row;
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_rows_pads_short_rows() {
        let table = Table::from_rows(
            "t",
            Some(vec!["a".into(), "b".into()]),
            vec![vec!["1".into(), "2".into()], vec!["3".into()]],
        );
        assert_eq!(table.n_columns(), 2);
        assert_eq!(table.n_rows(), 2);
        assert!(table.cell(1, 1).is_some_and(Cell::is_null));
        assert_eq!(table.columns[0].header.as_deref(), Some("a"));
        assert!(table.context.has_header_row);
    }

    #[test]
    fn quantities_are_mostly_numbers_that_are_not_years() {
        let column =
            |cells: &[&str]| Column::new(None, cells.iter().map(|&c| Cell::new(c)).collect());
        assert!(column(&["2,140,526", "513,275", "3.5", "Lyon"]).is_quantity());
        // Missing cells do not count; years and names are not quantities.
        assert!(column(&["12", "", "n/a", "7"]).is_quantity());
        assert!(!column(&["1998", "2004", "2011", "17"]).is_quantity());
        assert!(!column(&["Paris", "Lyon", "3"]).is_quantity());
        assert!(!column(&["2020-06-29", "2021-01-02"]).is_quantity());
        assert!(!column(&[]).is_quantity());
    }

    #[test]
    fn cell_counts_leave_missing_cells_out_and_count_years_among_numbers() {
        let cells = [
            "Paris",
            "",
            "1998",
            "2,140,526",
            "2020-06-29",
            "true",
            "n/a",
            "3.5",
        ];
        let column = Column::new(None, cells.iter().map(|&c| Cell::new(c)).collect());
        let expected = CellCounts {
            filled: 6,
            text: 1,
            numbers: 3,
            years: 1,
            dates: 1,
        };
        assert_eq!(column.cell_counts(), expected);
    }
}
