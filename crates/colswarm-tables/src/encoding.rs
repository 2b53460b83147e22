//! The text encoding of a delimited file: UTF-8, or the single-byte Windows-1252 that
//! spreadsheet programs on Windows still write when a table is saved as "CSV" (Latin-1 files
//! read the same way).
//!
//! A delimited file's structure (delimiters, quotes, line ends) is ASCII in both, so the
//! parser splits the bytes first and each cell is decoded on its own. Windows-1252 is decoded
//! as the WHATWG Encoding Standard does (what browsers do with a page labelled `latin1`,
//! `iso-8859-1` or `windows-1252`): bytes `0x00`–`0x7F` and `0xA0`–`0xFF` are the code points
//! of the same value, `0x80`–`0x9F` the printable characters below (`0x80` is `€`, `0x93` and
//! `0x94` are curly quotes), and the five bytes the code page leaves undefined map to the C1
//! control of the same value. Every byte decodes, so a Windows-1252 file never has an invalid
//! cell.
//!
//! `auto` is for folders whose files come from both kinds of program: each cell that is valid
//! UTF-8 reads as UTF-8, any other as Windows-1252. Text outside ASCII in Windows-1252 is
//! almost never valid UTF-8 (an accented letter is one byte of `0xC0`–`0xFF` followed by a
//! letter, which UTF-8 forbids), so each file reads as it was written.

use std::fmt;
use std::str::FromStr;

/// How the bytes of a delimited file's cells become text.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum TextEncoding {
    /// UTF-8 (the default); a byte sequence that is not UTF-8 is an error, or U+FFFD in lossy
    /// mode. A leading byte-order mark is dropped.
    #[default]
    #[serde(rename = "utf-8")]
    Utf8,
    /// Windows-1252, a superset of Latin-1 (ISO-8859-1) in every printable character.
    #[serde(rename = "windows-1252")]
    Windows1252,
    /// Each cell as UTF-8 where it is valid UTF-8, else as Windows-1252; never fails.
    #[serde(rename = "auto")]
    Auto,
}

/// Windows-1252's characters for bytes `0x80`–`0x9F`; the undefined bytes (`0x81`, `0x8D`,
/// `0x8F`, `0x90`, `0x9D`) keep their own value, a C1 control.
const HIGH_CONTROLS: [char; 32] = [
    '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8D}', 'Ž', '\u{8F}',
    '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9D}', 'ž', 'Ÿ',
];

impl TextEncoding {
    /// Whether one byte is one character (cut cells need no care for character boundaries).
    pub fn is_single_byte(self) -> bool {
        self == TextEncoding::Windows1252
    }
}

/// Decodes Windows-1252 bytes; never fails.
pub fn decode_windows_1252(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&byte| match byte {
            0x80..=0x9F => HIGH_CONTROLS[usize::from(byte - 0x80)],
            _ => char::from(byte),
        })
        .collect()
}

impl FromStr for TextEncoding {
    type Err = String;

    /// Encoding names as users and the WHATWG labels spell them, case ignored: `utf-8`,
    /// `utf8`; `windows-1252`, `cp1252`, `latin-1`, `latin1`, `iso-8859-1`; and `auto`.
    fn from_str(name: &str) -> Result<Self, String> {
        match name.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "utf-8" | "utf8" => Ok(TextEncoding::Utf8),
            "windows-1252" | "cp1252" | "latin-1" | "latin1" | "iso-8859-1" => {
                Ok(TextEncoding::Windows1252)
            }
            "auto" => Ok(TextEncoding::Auto),
            _ => Err(format!(
                "unknown text encoding `{name}` (expected utf-8, windows-1252, also called \
                 cp1252, latin-1 or iso-8859-1, or auto: each cell as UTF-8 where it is, else \
                 as windows-1252)"
            )),
        }
    }
}

impl fmt::Display for TextEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TextEncoding::Utf8 => "utf-8",
            TextEncoding::Windows1252 => "windows-1252",
            TextEncoding::Auto => "auto",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin_1_bytes_are_their_own_code_points() {
        let bytes: Vec<u8> = (0x00..=0x7F).chain(0xA0..=0xFF).collect();
        let text = decode_windows_1252(&bytes);
        let points: Vec<u32> = text.chars().map(u32::from).collect();
        let expected: Vec<u32> = bytes.iter().map(|&b| u32::from(b)).collect();
        assert_eq!(points, expected);
        assert_eq!(decode_windows_1252(b"M\xfcnchen, K\xf6ln"), "München, Köln");
    }

    #[test]
    fn the_high_controls_are_windows_1252_characters() {
        assert_eq!(decode_windows_1252(b"\x80 5"), "€ 5");
        assert_eq!(decode_windows_1252(b"\x93quoted\x94"), "“quoted”");
        assert_eq!(decode_windows_1252(b"\x8a\x9f"), "ŠŸ");
        // Undefined in the code page: kept as the C1 control of the same value.
        assert_eq!(decode_windows_1252(b"\x81\x9d"), "\u{81}\u{9d}");
        // One character per byte, whatever the byte.
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode_windows_1252(&all).chars().count(), 256);
    }

    #[test]
    fn names_parse_in_their_usual_spellings() {
        for name in ["utf-8", "UTF8", " utf_8 "] {
            assert_eq!(name.parse(), Ok(TextEncoding::Utf8), "{name}");
        }
        for name in [
            "windows-1252",
            "CP1252",
            "latin-1",
            "Latin1",
            "ISO-8859-1",
            "iso_8859_1",
        ] {
            assert_eq!(name.parse(), Ok(TextEncoding::Windows1252), "{name}");
        }
        let error = "utf-16".parse::<TextEncoding>().unwrap_err();
        assert!(
            error.contains("`utf-16`") && error.contains("windows-1252"),
            "{error}"
        );
        assert_eq!(TextEncoding::Windows1252.to_string(), "windows-1252");
        assert_eq!(TextEncoding::default(), TextEncoding::Utf8);
        for encoding in [
            TextEncoding::Utf8,
            TextEncoding::Windows1252,
            TextEncoding::Auto,
        ] {
            assert_eq!(encoding.to_string().parse(), Ok(encoding));
            let json = serde_json::to_string(&encoding).unwrap();
            assert_eq!(json, format!("\"{encoding}\""));
            assert_eq!(
                serde_json::from_str::<TextEncoding>(&json).unwrap(),
                encoding
            );
        }
        assert_eq!(" Auto ".parse(), Ok(TextEncoding::Auto));
    }
}
