//! A column's value statistics as a few discrete tokens: what its cells are as a set, which
//! character n-grams of single cells cannot see. An `id` column counts up by one, a `year`
//! column holds integers from 1000 to 2100, a `code` column's cells all have one length, a
//! `name` column's cells are distinct and two words long. The tokens join a column's n-gram
//! bag as a block of their own ([`crate::NgramConfig::value_stats`]).
//!
//! ```
//! use colswarm_tables::{Cell, Column, value_statistics};
//!
//! let ids = Column::new(None, ["7", "8", "9", "10"].map(Cell::new).to_vec());
//! let tokens = value_statistics(&ids, 20);
//! assert!(tokens.iter().any(|t| t == "numbers:all"));
//! assert!(tokens.iter().any(|t| t == "steps-by-one"));
//! ```

use crate::cell::CellKind;
use crate::table::Column;

/// The statistics tokens of `column`, from its first `max_cells` non-null cells (the cells
/// its n-grams read) and its share of missing cells. An empty column gives `["empty"]`.
pub fn value_statistics(column: &Column, max_cells: usize) -> Vec<String> {
    let cells: Vec<&crate::cell::Cell> = column
        .cells
        .iter()
        .filter(|c| !c.is_null())
        .take(max_cells)
        .collect();
    if cells.is_empty() {
        return vec!["empty".into()];
    }
    let n = cells.len();
    let mut tokens = vec![format!("missing:{}", missing_bin(column))];

    let numbers: Vec<f64> = cells.iter().filter_map(|c| number(c)).collect();
    tokens.push(format!("numbers:{}", share_bin(numbers.len(), n)));
    for (kind, name) in [
        (CellKind::Date, "dates"),
        (CellKind::Boolean, "booleans"),
        (CellKind::Text, "text"),
    ] {
        let count = cells.iter().filter(|c| c.kind() == kind).count();
        if count > 0 {
            tokens.push(format!("{name}:{}", share_bin(count, n)));
        }
    }
    if 2 * numbers.len() >= n {
        tokens.extend(number_tokens(&cells, &numbers));
    }

    if n >= 3 {
        let mut texts: Vec<&str> = cells.iter().map(|c| c.text().trim()).collect();
        texts.sort_unstable();
        texts.dedup();
        tokens.push(format!("distinct:{}", distinct_bin(texts.len(), n)));
    }
    let lengths: Vec<usize> = cells
        .iter()
        .map(|c| c.text().trim().chars().count())
        .collect();
    let mean_length = lengths.iter().sum::<usize>() as f64 / n as f64;
    tokens.push(format!("length:{}", log2_bin(mean_length, 9)));
    if n >= 3 && lengths.iter().all(|&l| l == lengths[0]) {
        tokens.push("length:fixed".into());
    }
    let words = cells
        .iter()
        .map(|c| c.text().split_whitespace().count())
        .sum::<usize>() as f64
        / n as f64;
    tokens.push(format!("words:{}", words_bin(words)));
    let letters = cells
        .iter()
        .filter(|c| c.text().chars().any(char::is_alphabetic))
        .count();
    tokens.push(format!("letters:{}", share_bin(letters, n)));
    let capitalised = cells
        .iter()
        .filter(|c| {
            c.text()
                .trim()
                .chars()
                .next()
                .is_some_and(char::is_uppercase)
        })
        .count();
    if letters > 0 {
        tokens.push(format!("capitalised:{}", share_bin(capitalised, n)));
    }
    tokens
}

/// Tokens of a column whose cells are mostly numbers: their magnitude, spread, sign, whether
/// they are whole, years, fractions, and whether they run in row order.
fn number_tokens(cells: &[&crate::cell::Cell], numbers: &[f64]) -> Vec<String> {
    let mut tokens = Vec::new();
    let integers = cells
        .iter()
        .filter(|c| c.kind() == CellKind::Integer)
        .count();
    tokens.push(format!("integers:{}", share_bin(integers, numbers.len())));
    let mut sorted = numbers.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2].abs();
    tokens.push(format!("magnitude:{}", log10_bin(median)));
    let (low, high) = (sorted[0], sorted[sorted.len() - 1]);
    tokens.push(format!("spread:{}", log10_bin(high - low)));
    if low < 0.0 {
        tokens.push("negative".into());
    }
    if numbers.iter().all(|&v| (0.0..=1.0).contains(&v)) {
        tokens.push("fractions".into());
    }
    let whole = |v: f64| v.fract() == 0.0;
    if integers == numbers.len() && numbers.iter().all(|&v| (1000.0..=2100.0).contains(&v)) {
        tokens.push("years".into());
    }
    if numbers.len() >= 3 {
        let pairs = numbers.windows(2);
        if pairs.clone().all(|w| w[1] > w[0]) {
            tokens.push("increasing".into());
            if numbers.iter().all(|&v| whole(v)) && pairs.clone().all(|w| w[1] - w[0] == 1.0) {
                tokens.push("steps-by-one".into());
            }
        } else if pairs.clone().all(|w| w[1] < w[0]) {
            tokens.push("decreasing".into());
        }
    }
    tokens
}

/// A cell's number: integers and decimals, thousands separators dropped.
fn number(cell: &crate::cell::Cell) -> Option<f64> {
    if !cell.is_numeric() {
        return None;
    }
    let text: String = cell
        .text()
        .trim()
        .chars()
        .filter(|&c| c != ',' && c != '_')
        .collect();
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn missing_bin(column: &Column) -> &'static str {
    let missing = column.cells.iter().filter(|c| c.is_null()).count();
    match missing {
        0 => "none",
        m if 10 * m < column.cells.len() => "few",
        m if 2 * m < column.cells.len() => "some",
        _ => "most",
    }
}

/// `none`, `some` (below half), `most` (half or more, not all), `all`.
fn share_bin(count: usize, of: usize) -> &'static str {
    match count {
        0 => "none",
        c if c == of => "all",
        c if 2 * c < of => "some",
        _ => "most",
    }
}

fn distinct_bin(distinct: usize, of: usize) -> &'static str {
    let share = distinct as f64 / of as f64;
    match share {
        s if s >= 1.0 => "all",
        s if s >= 0.9 => "most",
        s if s >= 0.5 => "half",
        s if s >= 0.2 => "some",
        _ => "few",
    }
}

/// `⌊log2(x)⌋`, from 0 (below 2, an empty text included) to `top`.
fn log2_bin(x: f64, top: i32) -> i32 {
    if x < 2.0 {
        0
    } else {
        (x.log2().floor() as i32).min(top)
    }
}

/// `⌊log10(x)⌋` from −3 to 9, or `zero`.
fn log10_bin(x: f64) -> String {
    if x == 0.0 {
        "zero".into()
    } else {
        (x.abs().log10().floor() as i32).clamp(-3, 9).to_string()
    }
}

fn words_bin(mean: f64) -> &'static str {
    match mean {
        m if m <= 1.0 => "1",
        m if m <= 2.0 => "2",
        m if m <= 4.0 => "3-4",
        m if m <= 8.0 => "5-8",
        _ => "more",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Cell;

    fn column(cells: &[&str]) -> Column {
        Column::new(None, cells.iter().map(|c| Cell::new(*c)).collect())
    }

    /// Asserts that `tokens` hold every token of `present` and none of `absent`.
    fn assert_tokens(tokens: &[String], present: &[&str], absent: &[&str]) {
        for token in present {
            assert!(
                tokens.iter().any(|t| t == token),
                "{token} not in {tokens:?}"
            );
        }
        for token in absent {
            assert!(!tokens.iter().any(|t| t == token), "{token} in {tokens:?}");
        }
    }

    #[test]
    fn identifiers_years_and_fractions_are_told_apart() {
        let ids = value_statistics(&column(&["101", "102", "103", "104"]), 20);
        let id_tokens = ["steps-by-one", "increasing", "magnitude:2", "integers:all"];
        assert_tokens(&ids, &id_tokens, &["years"]);
        let years = value_statistics(&column(&["1999", "2004", "1987", "2004"]), 20);
        assert_tokens(&years, &["years", "distinct:half"], &["increasing"]);
        let shares = value_statistics(&column(&["0.25", "0.5", "0.125"]), 20);
        assert_tokens(
            &shares,
            &["fractions", "integers:none", "magnitude:-1"],
            &[],
        );
        let amounts = value_statistics(&column(&["-1,200", "3,400,000", "15"]), 20);
        assert_tokens(&amounts, &["negative", "spread:6"], &["fractions"]);
    }

    #[test]
    fn text_columns_get_length_words_and_capitals() {
        let cells = ["Ada Lovelace", "Alan Turing", "Grace Hopper"];
        let names = value_statistics(&column(&cells), 20);
        let name_tokens = ["numbers:none", "text:all", "words:2", "capitalised:all"];
        assert_tokens(&names, &name_tokens, &["magnitude:0"]);
        assert_tokens(&names, &["distinct:all", "length:3"], &[]);
        let codes = value_statistics(&column(&["AB1", "CD2", "EF3", "AB1"]), 20);
        assert_tokens(&codes, &["length:fixed"], &[]);
    }

    #[test]
    fn only_the_first_non_null_cells_count_and_missing_cells_are_binned() {
        let cut = value_statistics(&column(&["", "1", "2", "3", "x"]), 3);
        assert_eq!(cut, value_statistics(&column(&["", "1", "2", "3"]), 20));
        assert_tokens(&cut, &["missing:some", "steps-by-one"], &[]);
        assert_eq!(value_statistics(&column(&["", "NULL"]), 20), ["empty"]);
        assert_eq!(value_statistics(&column(&[]), 20), ["empty"]);
    }
}
