//! A small parser for the Python literals embedded in the WikiTables-TURL CSV files (lists,
//! tuples, sets, dicts, strings with either quote, integers, floats, `None`, `True`, `False`).
//! Nesting is capped so hostile input cannot exhaust the stack.

/// A parsed Python literal.
#[derive(Debug, Clone, PartialEq)]
pub enum PyValue {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An integer that fits in `i64`.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A list, tuple or set (order as written).
    List(Vec<PyValue>),
    /// A dict, as key/value pairs in written order.
    Dict(Vec<(PyValue, PyValue)>),
}

impl PyValue {
    /// The items of a list, tuple or set.
    pub fn as_list(&self) -> Option<&[PyValue]> {
        match self {
            PyValue::List(items) => Some(items),
            _ => None,
        }
    }

    /// The text of a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            PyValue::Str(text) => Some(text),
            _ => None,
        }
    }

    /// The value of an integer.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            PyValue::Int(n) => Some(*n),
            _ => None,
        }
    }
}

/// Why a literal did not parse, and where (byte offset in the input).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyParseError {
    /// Byte offset of the problem.
    pub offset: usize,
    /// What went wrong.
    pub message: String,
}

const MAX_DEPTH: usize = 64;

/// Parses one literal; trailing whitespace is allowed, anything else after it is an error.
pub fn parse_python_literal(input: &str) -> Result<PyValue, PyParseError> {
    let mut parser = Parser {
        bytes: input.as_bytes(),
        text: input,
        at: 0,
    };
    let value = parser.value(0)?;
    parser.skip_whitespace();
    if parser.at != parser.bytes.len() {
        return Err(parser.error("unexpected text after the literal"));
    }
    Ok(value)
}

struct Parser<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> PyParseError {
        PyParseError {
            offset: self.at,
            message: message.to_string(),
        }
    }

    fn skip_whitespace(&mut self) {
        while self.at < self.bytes.len() && self.bytes[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn value(&mut self, depth: usize) -> Result<PyValue, PyParseError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        self.skip_whitespace();
        match self.peek() {
            None => Err(self.error("unexpected end of input")),
            Some(b'[') => self.sequence(b']', depth).map(PyValue::List),
            Some(b'(') => self.sequence(b')', depth).map(PyValue::List),
            Some(b'{') => self.brace(depth),
            Some(quote @ (b'\'' | b'"')) => self.string(quote).map(PyValue::Str),
            Some(b'-' | b'+' | b'0'..=b'9' | b'.') => self.number(),
            Some(_) => self.keyword(),
        }
    }

    /// Items up to `close`; the opening bracket is at `self.at`.
    fn sequence(&mut self, close: u8, depth: usize) -> Result<Vec<PyValue>, PyParseError> {
        self.at += 1;
        let mut items = Vec::new();
        loop {
            self.skip_whitespace();
            if self.peek() == Some(close) {
                self.at += 1;
                return Ok(items);
            }
            items.push(self.value(depth + 1)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(c) if c == close => {}
                _ => return Err(self.error("expected `,` or a closing bracket")),
            }
        }
    }

    /// A set `{a, b}` or a dict `{k: v}`.
    fn brace(&mut self, depth: usize) -> Result<PyValue, PyParseError> {
        self.at += 1;
        let mut set = Vec::new();
        let mut dict = Vec::new();
        loop {
            self.skip_whitespace();
            if self.peek() == Some(b'}') {
                self.at += 1;
                return Ok(if dict.is_empty() {
                    PyValue::List(set)
                } else {
                    PyValue::Dict(dict)
                });
            }
            let key = self.value(depth + 1)?;
            self.skip_whitespace();
            if self.peek() == Some(b':') {
                if !set.is_empty() {
                    return Err(self.error("mixed set and dict items"));
                }
                self.at += 1;
                let value = self.value(depth + 1)?;
                dict.push((key, value));
            } else {
                if !dict.is_empty() {
                    return Err(self.error("mixed set and dict items"));
                }
                set.push(key);
            }
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {}
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    fn string(&mut self, quote: u8) -> Result<String, PyParseError> {
        self.at += 1;
        let mut out = String::new();
        loop {
            // Copy the run of plain characters in one go.
            let start = self.at;
            while self.at < self.bytes.len()
                && self.bytes[self.at] != quote
                && self.bytes[self.at] != b'\\'
            {
                self.at += 1;
            }
            out.push_str(&self.text[start..self.at]);
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(b'\\') => {
                    self.at += 1;
                    self.escape(&mut out)?;
                }
                Some(_) => {
                    self.at += 1;
                    return Ok(out);
                }
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), PyParseError> {
        let Some(c) = self.peek() else {
            return Err(self.error("unterminated escape"));
        };
        self.at += 1;
        match c {
            b'n' => out.push('\n'),
            b't' => out.push('\t'),
            b'r' => out.push('\r'),
            b'0' => out.push('\0'),
            b'\\' | b'\'' | b'"' => out.push(char::from(c)),
            b'x' => out.push(self.hex_char(2)?),
            b'u' => out.push(self.hex_char(4)?),
            b'U' => out.push(self.hex_char(8)?),
            b'\n' => {}
            _ => {
                // Python keeps unknown escapes verbatim.
                out.push('\\');
                self.at -= 1;
                let rest = &self.text[self.at..];
                if let Some(ch) = rest.chars().next() {
                    out.push(ch);
                    self.at += ch.len_utf8();
                }
            }
        }
        Ok(())
    }

    fn hex_char(&mut self, digits: usize) -> Result<char, PyParseError> {
        let end = self.at + digits;
        let hex = self
            .text
            .get(self.at..end)
            .ok_or_else(|| self.error("short hex escape"))?;
        let code = u32::from_str_radix(hex, 16).map_err(|_| self.error("bad hex escape"))?;
        self.at = end;
        char::from_u32(code).ok_or_else(|| self.error("escape is not a valid char"))
    }

    fn number(&mut self) -> Result<PyValue, PyParseError> {
        let start = self.at;
        while self.at < self.bytes.len()
            && matches!(
                self.bytes[self.at],
                b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E' | b'_'
            )
        {
            self.at += 1;
        }
        let text = self.text[start..self.at].replace('_', "");
        if let Ok(n) = text.parse::<i64>() {
            return Ok(PyValue::Int(n));
        }
        text.parse::<f64>()
            .map(PyValue::Float)
            .map_err(|_| PyParseError {
                offset: start,
                message: format!("`{text}` is not a number"),
            })
    }

    fn keyword(&mut self) -> Result<PyValue, PyParseError> {
        let rest = &self.bytes[self.at..];
        for (word, value) in [
            (&b"None"[..], PyValue::None),
            (b"True", PyValue::Bool(true)),
            (b"False", PyValue::Bool(false)),
            (b"nan", PyValue::Float(f64::NAN)),
        ] {
            if rest.starts_with(word) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err(self.error("expected a literal"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turl_cells() {
        let value = parse_python_literal(
            r#"[[[[0, 0], [524139, 'Bottle Rocket']], [[10, 0], [26121980, "Today's Special"]]]]"#,
        )
        .unwrap();
        let column = &value.as_list().unwrap()[0];
        let cell = &column.as_list().unwrap()[1];
        let parts = cell.as_list().unwrap();
        assert_eq!(parts[0].as_list().unwrap()[0].as_int(), Some(10));
        assert_eq!(
            parts[1].as_list().unwrap()[1].as_str(),
            Some("Today's Special")
        );
    }

    #[test]
    fn strings_sets_and_escapes() {
        assert_eq!(
            parse_python_literal(r#"'I\'m \x41\u00e9\\'"#).unwrap(),
            PyValue::Str("I'm Aé\\".into())
        );
        assert_eq!(
            parse_python_literal("{'film', 'tv'}").unwrap(),
            PyValue::List(vec![PyValue::Str("film".into()), PyValue::Str("tv".into())])
        );
        assert!(matches!(
            parse_python_literal("{'a': 1}").unwrap(),
            PyValue::Dict(_)
        ));
        assert_eq!(
            parse_python_literal("(-1.5, None, True)")
                .unwrap()
                .as_list()
                .map(<[PyValue]>::len),
            Some(3)
        );
    }

    #[test]
    fn errors_have_offsets() {
        let error = parse_python_literal("[1, 2").unwrap_err();
        assert_eq!(error.offset, 5);
        assert!(parse_python_literal("'open").is_err());
        assert!(parse_python_literal("[1] x").is_err());
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(parse_python_literal(&deep).is_err());
    }
}
