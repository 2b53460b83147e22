//! The words of a column, as a word-vector lookup reads them: its header's and its first cells'
//! lower-cased runs of letters and digits.
//!
//! Static word vectors (GloVe) are a lookup per word: a column's mean vector tells `Paris` and
//! `Berlin` are places even when no training column held them. This module only cuts the text;
//! the lookup is the model's (`colswarm_swarm::WordVectors`).
//!
//! ```
//! use colswarm_tables::{Cell, Column, ColumnWords};
//!
//! let column = Column::new(Some("Home city".into()), vec![Cell::new("New York"), Cell::new("")]);
//! let words = ColumnWords::of(&column, 20);
//! assert_eq!(words.header, ["home", "city"]);
//! assert_eq!(words.cells, ["new", "york"]);
//! ```

use crate::table::Column;

/// Words of one cell that count: a long free-text cell adds cost and little signal.
const MAX_WORDS_PER_CELL: usize = 16;

/// The words of a column's header and of its first non-null cells, in reading order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnWords {
    /// Words of the cells (at most 16 per cell).
    pub cells: Vec<String>,
    /// Words of the header (none when it has none).
    pub header: Vec<String>,
}

impl ColumnWords {
    /// The words of `column`'s header and of its first `max_cells` non-null cells.
    pub fn of(column: &Column, max_cells: usize) -> Self {
        let mut cells = Vec::new();
        for cell in column.cells.iter().filter(|c| !c.is_null()).take(max_cells) {
            cells.extend(words(cell.text()).take(MAX_WORDS_PER_CELL));
        }
        ColumnWords {
            cells,
            header: column
                .header
                .as_deref()
                .map_or_else(Vec::new, |h| words(h).collect()),
        }
    }
}

/// The lower-cased maximal runs of alphanumeric characters of `text` (`"O'Brien, 3.5"` gives
/// `o`, `brien`, `3`, `5`).
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Cell;

    #[test]
    fn splits_on_anything_but_letters_and_digits() {
        let got: Vec<String> = words("  Ünïcode-Straße, O'Brien (1990)  ").collect();
        assert_eq!(got, ["ünïcode", "straße", "o", "brien", "1990"]);
        assert_eq!(words("--, .").count(), 0);
    }

    #[test]
    fn takes_the_first_non_null_cells_and_caps_each_cell() {
        let long = (0..40)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        let column = Column::new(
            None,
            vec![
                Cell::new(""),
                Cell::new("a b"),
                Cell::new(long),
                Cell::new("never read"),
            ],
        );
        let words = ColumnWords::of(&column, 2);
        assert!(words.header.is_empty());
        assert_eq!(words.cells.len(), 2 + MAX_WORDS_PER_CELL);
        assert_eq!(words.cells[..3], ["a", "b", "w0"]);
        assert!(!words.cells.contains(&"never".to_string()));
    }
}
