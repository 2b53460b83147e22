//! One table cell: its text, kept as read, and a coarse [`CellKind`].

/// What a cell's text looks like. Classification is syntactic and cheap (no locale, no
/// parsing into values); it lets callers and the serializer tell missing values, numbers and
/// dates from free text without losing the original text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CellKind {
    /// Missing value: empty or whitespace-only text, JSON `null`, or a common null marker
    /// (`NULL`, `null`, `None`, `NaN`, `nan`, `N/A`, `n/a`, `NA`, `-`, `--`, `—`, `?`).
    Null,
    /// `true` / `false` in any letter case.
    Boolean,
    /// An optionally signed integer, with optional `,` or `_` thousands separators.
    Integer,
    /// An optionally signed decimal number, possibly with an exponent (`1.5`, `-2e10`, `.5`).
    Decimal,
    /// A calendar date or date-time: `2020-06-29`, `2020-06-29T14:00:00+00:00`, `29/06/2020`,
    /// `06.29.2020`, `2020/6/29`.
    Date,
    /// A JSON array or object (SOTAB keeps some values nested); its text is compact JSON.
    Nested,
    /// Anything else.
    Text,
}

/// A single cell. The text is exactly what the source held (for JSON sources: the string
/// value, the number as written, or compact JSON for nested values; JSON `null` gives an
/// empty text with kind [`CellKind::Null`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cell {
    text: String,
    kind: CellKind,
}

impl Cell {
    /// A cell whose kind is classified from its text.
    pub fn new(text: impl Into<String>) -> Self {
        let text = text.into();
        let kind = classify(&text);
        Cell { text, kind }
    }

    /// A cell with an explicit kind (readers use this for JSON nulls and nested values).
    pub fn with_kind(text: impl Into<String>, kind: CellKind) -> Self {
        Cell {
            text: text.into(),
            kind,
        }
    }

    /// A missing value with empty text.
    pub fn null() -> Self {
        Cell {
            text: String::new(),
            kind: CellKind::Null,
        }
    }

    /// The cell's text, as read.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The cell's kind.
    pub fn kind(&self) -> CellKind {
        self.kind
    }

    /// True when the cell is a missing value.
    pub fn is_null(&self) -> bool {
        self.kind == CellKind::Null
    }

    /// True for integers and decimals.
    pub fn is_numeric(&self) -> bool {
        matches!(self.kind, CellKind::Integer | CellKind::Decimal)
    }
}

const NULL_MARKERS: &[&str] = &[
    "null", "none", "nan", "n/a", "na", "nil", "-", "--", "\u{2014}", "?",
];

/// Classifies a cell's text. Leading and trailing whitespace is ignored.
pub fn classify(text: &str) -> CellKind {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return CellKind::Null;
    }
    // Markers are short; checking the length first keeps the common case free of lowercasing.
    if trimmed.len() <= 4 && NULL_MARKERS.iter().any(|m| trimmed.eq_ignore_ascii_case(m)) {
        return CellKind::Null;
    }
    if trimmed.eq_ignore_ascii_case("true") || trimmed.eq_ignore_ascii_case("false") {
        return CellKind::Boolean;
    }
    let bytes = trimmed.as_bytes();
    match bytes[0] {
        b'[' | b'{' if looks_nested(bytes) => CellKind::Nested,
        b'0'..=b'9' | b'+' | b'-' | b'.' => {
            if is_integer(bytes) {
                CellKind::Integer
            } else if is_decimal(bytes) {
                CellKind::Decimal
            } else if is_date(bytes) {
                CellKind::Date
            } else {
                CellKind::Text
            }
        }
        _ => CellKind::Text,
    }
}

fn looks_nested(bytes: &[u8]) -> bool {
    let last = bytes[bytes.len() - 1];
    (bytes[0] == b'[' && last == b']') || (bytes[0] == b'{' && last == b'}')
}

fn strip_sign(bytes: &[u8]) -> &[u8] {
    match bytes.first() {
        Some(b'+' | b'-') => &bytes[1..],
        _ => bytes,
    }
}

/// Digits with optional thousands separators in groups of three (`1,234,567`).
fn is_grouped_digits(bytes: &[u8]) -> bool {
    if bytes.is_empty() || !bytes[0].is_ascii_digit() {
        return false;
    }
    let separator = bytes.iter().copied().find(|b| *b == b',' || *b == b'_');
    let Some(separator) = separator else {
        return bytes.iter().all(u8::is_ascii_digit);
    };
    let mut groups = bytes.split(|b| *b == separator);
    let Some(first) = groups.next() else {
        return false;
    };
    if first.is_empty() || first.len() > 3 || !first.iter().all(u8::is_ascii_digit) {
        return false;
    }
    groups.all(|g| g.len() == 3 && g.iter().all(u8::is_ascii_digit))
}

fn is_integer(bytes: &[u8]) -> bool {
    is_grouped_digits(strip_sign(bytes))
}

fn is_decimal(bytes: &[u8]) -> bool {
    let body = strip_sign(bytes);
    let (mantissa, exponent) = match body.iter().position(|b| *b == b'e' || *b == b'E') {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    if let Some(exponent) = exponent {
        let digits = strip_sign(exponent);
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return false;
        }
    }
    let (whole, fraction) = match mantissa.iter().position(|b| *b == b'.') {
        Some(at) => (&mantissa[..at], Some(&mantissa[at + 1..])),
        None => (mantissa, None),
    };
    let whole_ok = whole.is_empty() || is_grouped_digits(whole);
    match fraction {
        Some(fraction) => {
            whole_ok
                && fraction.iter().all(u8::is_ascii_digit)
                && !(whole.is_empty() && fraction.is_empty())
        }
        // Without a fraction only an exponent makes it a decimal (`3e5`).
        None => exponent.is_some() && !whole.is_empty() && whole_ok,
    }
}

/// Splits leading digit runs separated by one of `-/.`; returns the runs' lengths.
fn date_part_lengths(bytes: &[u8]) -> Option<([usize; 3], usize)> {
    let mut lengths = [0usize; 3];
    let mut part = 0;
    let mut separator = None;
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        if b.is_ascii_digit() {
            lengths[part] += 1;
        } else if matches!(b, b'-' | b'/' | b'.') && part < 2 && lengths[part] > 0 {
            if *separator.get_or_insert(b) != b {
                return None;
            }
            part += 1;
        } else {
            break;
        }
        at += 1;
    }
    (part == 2 && lengths[2] > 0).then_some((lengths, at))
}

fn is_date(bytes: &[u8]) -> bool {
    let Some((lengths, consumed)) = date_part_lengths(bytes) else {
        return false;
    };
    let shape_ok = matches!(
        lengths,
        [4, 1..=2, 1..=2] | [1..=2, 1..=2, 4] | [1..=2, 1..=2, 2]
    );
    if !shape_ok {
        return false;
    }
    let rest = &bytes[consumed..];
    // A time part may follow: `T14:00:00+00:00` or ` 00:00:00.000`.
    rest.is_empty()
        || (matches!(rest[0], b'T' | b' ')
            && rest.len() > 1
            && rest[1].is_ascii_digit()
            && rest[1..]
                .iter()
                .all(|b| b.is_ascii_digit() || matches!(b, b':' | b'.' | b'+' | b'-' | b'Z')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nulls() {
        for text in ["", "  ", "NULL", "null", "NaN", "N/A", "-", "None"] {
            assert_eq!(classify(text), CellKind::Null, "{text:?}");
        }
        assert!(Cell::null().is_null());
    }

    #[test]
    fn numbers() {
        for text in ["0", "-12", "+7", "1,234,567", "336"] {
            assert_eq!(classify(text), CellKind::Integer, "{text:?}");
        }
        for text in ["16.0", "-0.5", ".5", "3e5", "1,234.50", "2.5E-3"] {
            assert_eq!(classify(text), CellKind::Decimal, "{text:?}");
        }
        for text in ["1,23", "12a", "1.2.3", ".", "e5", "978-972-0-68199-7"] {
            assert!(
                !matches!(classify(text), CellKind::Integer | CellKind::Decimal),
                "{text:?}"
            );
        }
    }

    #[test]
    fn dates() {
        for text in [
            "2013-06-12",
            "2020-06-29T14:00:00+00:00",
            "2018-06-21 00:00:00.000",
            "29/06/2020",
            "6.29.2020",
            "2020/6/29",
        ] {
            assert_eq!(classify(text), CellKind::Date, "{text:?}");
        }
        assert_eq!(classify("978-972-0-68199-7"), CellKind::Text);
        assert_eq!(classify("2020-06"), CellKind::Text);
    }

    #[test]
    fn other_kinds() {
        assert_eq!(classify("TRUE"), CellKind::Boolean);
        assert_eq!(classify("[\"$9.75\",\"$3.99\"]"), CellKind::Nested);
        assert_eq!(classify("Desejo Subtil"), CellKind::Text);
        assert_eq!(classify("$9.75"), CellKind::Text);
        assert_eq!(Cell::new(" 42 ").text(), " 42 ");
    }
}
