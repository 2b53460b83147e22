//! The byte-level tokenizer: ids `0..=255` are raw bytes, ids from 256 up are structure tokens.
//!
//! | id  | constant        | meaning                                                            |
//! |-----|-----------------|--------------------------------------------------------------------|
//! | 256 | [`PAD`]         | padding for batching; never produced inside a sequence             |
//! | 257 | [`TABLE_START`] | first token of a table segment                                     |
//! | 258 | [`TABLE_END`]   | last token of a table segment                                      |
//! | 259 | [`CONTEXT_SEP`] | ends one context field (page title, section title, caption)        |
//! | 260 | [`COLUMN_SEP`]  | opens a column (so it also separates columns); its index follows   |
//! | 261 | [`HEADER_START`]| opens the column header (after the index digits)                   |
//! | 262 | [`HEADER_END`]  | closes the column header; cells follow                             |
//! | 263 | [`CELL_SEP`]    | separates two cells of a column                                    |
//! | 264 | [`NULL_CELL`]   | stands for a missing value (instead of its text)                   |
//! | 265 | [`QUERY_START`] | opens a per-column query segment                                   |
//! | 266 | [`QUERY_END`]   | closes a query segment: the column is read out at this token       |
//!
//! The model's embedding has exactly [`VOCAB_SIZE`] rows.

/// Padding.
pub const PAD: u32 = 256;
/// First token of a table segment.
pub const TABLE_START: u32 = 257;
/// Last token of a table segment.
pub const TABLE_END: u32 = 258;
/// Ends one context field (page title, section title, caption).
pub const CONTEXT_SEP: u32 = 259;
/// Opens a column; the column index follows as ASCII digits.
pub const COLUMN_SEP: u32 = 260;
/// Opens a column header.
pub const HEADER_START: u32 = 261;
/// Closes a column header.
pub const HEADER_END: u32 = 262;
/// Separates two cells of a column.
pub const CELL_SEP: u32 = 263;
/// A missing value.
pub const NULL_CELL: u32 = 264;
/// Opens a per-column query segment.
pub const QUERY_START: u32 = 265;
/// Closes a query segment; the column representation is read at this position.
pub const QUERY_END: u32 = 266;

/// The structure tokens, in id order, with their display names.
pub const SPECIAL_TOKENS: [(u32, &str); 11] = [
    (PAD, "<pad>"),
    (TABLE_START, "<table>"),
    (TABLE_END, "</table>"),
    (CONTEXT_SEP, "<ctx>"),
    (COLUMN_SEP, "<col>"),
    (HEADER_START, "<hdr>"),
    (HEADER_END, "</hdr>"),
    (CELL_SEP, "<cell>"),
    (NULL_CELL, "<null>"),
    (QUERY_START, "<query>"),
    (QUERY_END, "</query>"),
];

/// Number of byte tokens.
pub const N_BYTE_TOKENS: usize = 256;

/// Size of the vocabulary: 256 bytes plus the structure tokens.
pub const VOCAB_SIZE: usize = N_BYTE_TOKENS + SPECIAL_TOKENS.len();

/// Encodes text and decodes token ids. Stateless: bytes map to themselves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ByteTokenizer;

impl ByteTokenizer {
    /// The byte ids of `text`.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        text.bytes().map(u32::from).collect()
    }

    /// Appends the byte ids of `bytes` to `out`.
    pub fn encode_into(&self, bytes: &[u8], out: &mut Vec<u32>) {
        out.extend(bytes.iter().map(|b| u32::from(*b)));
    }

    /// Readable text for a sequence: bytes are decoded as UTF-8 (lossily) and structure
    /// tokens appear as their names (`<col>`, `<cell>`, ...). Unknown ids appear as `<?id>`.
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut out = String::new();
        let mut bytes = Vec::new();
        for &id in ids {
            if let Ok(byte) = u8::try_from(id) {
                bytes.push(byte);
                continue;
            }
            out.push_str(&String::from_utf8_lossy(&bytes));
            bytes.clear();
            match token_name(id) {
                Some(name) => out.push_str(name),
                None => out.push_str(&format!("<?{id}>")),
            }
        }
        out.push_str(&String::from_utf8_lossy(&bytes));
        out
    }
}

/// The display name of a structure token, or `None` for bytes and unknown ids.
pub fn token_name(id: u32) -> Option<&'static str> {
    SPECIAL_TOKENS
        .iter()
        .find(|(token, _)| *token == id)
        .map(|(_, name)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specials_are_contiguous_after_bytes() {
        for (offset, (id, _)) in SPECIAL_TOKENS.iter().enumerate() {
            assert_eq!(*id as usize, N_BYTE_TOKENS + offset);
        }
        assert_eq!(VOCAB_SIZE, 267);
        assert_eq!(QUERY_END as usize, VOCAB_SIZE - 1);
    }

    #[test]
    fn round_trip() {
        let tokenizer = ByteTokenizer;
        let mut ids = vec![TABLE_START];
        ids.extend(tokenizer.encode("héllo"));
        ids.push(CELL_SEP);
        assert_eq!(tokenizer.decode(&ids), "<table>héllo<cell>");
        assert_eq!(tokenizer.decode(&[999]), "<?999>");
        assert_eq!(token_name(65), None);
    }
}
