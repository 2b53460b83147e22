//! HTML character references in text scraped from web pages (`h&ouml;he`, `&nbsp;`, `&#8217;`).
//!
//! T2D's tables were cut out of HTML and keep its escapes: a header reads `vollst&auml;ndiger
//! name` and 73,000 cells hold nothing but `&nbsp;`. [`decode_html_entities`] turns the
//! references into the characters a browser shows, so that a model reads `höhe` and an empty
//! cell rather than their escapes.
//!
//! What it decodes:
//! - named references that end in `;`, from HTML 4's set (Latin-1, the special characters and
//!   the common symbols: `&auml;`, `&mdash;`, `&euro;`, `&trade;`, …), plus `&apos;`;
//! - decimal and hexadecimal references (`&#246;`, `&#xF6;`), with code points 128–159 read as
//!   Windows-1252, as HTML5 does (`&#146;` is `’`);
//! - `&nbsp;` and `&#160;` as a plain space, since a web table uses them for blank space, not
//!   for a character a reader should see.
//!
//! Numeric references to control characters and noncharacters (`&#1;`, `&#xFFFF;`) are dropped,
//! as Python's `html.unescape` drops them. Anything else is kept as written: a bare `&`, an
//! unknown name, a reference without its `;`, or a number that is no character (`&#0;`, a
//! surrogate, past `U+10FFFF`, or 128–159 where Windows-1252 has none).

use std::borrow::Cow;

/// Text with its HTML character references decoded (see the [module docs](self)).
/// Borrows when the text holds no `&`.
///
/// ```
/// use colswarm_tables::decode_html_entities;
///
/// assert_eq!(decode_html_entities("h&ouml;he"), "höhe");
/// assert_eq!(decode_html_entities("&nbsp;"), " ");
/// assert_eq!(decode_html_entities("AT&T"), "AT&T");
/// ```
pub fn decode_html_entities(text: &str) -> Cow<'_, str> {
    if !text.contains('&') {
        return Cow::Borrowed(text);
    }
    let mut decoded = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('&') {
        decoded.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match reference(after) {
            Some((character, length)) => {
                decoded.extend(character);
                rest = &after[length..];
            }
            None => {
                decoded.push('&');
                rest = after;
            }
        }
    }
    decoded.push_str(rest);
    Cow::Owned(decoded)
}

/// The character a reference stands for (`None` where it is dropped) and the bytes it takes
/// after its `&` (its `;` included), or `None` when `text` does not start with a reference
/// this module decodes.
fn reference(text: &str) -> Option<(Option<char>, usize)> {
    // The longest name (`thetasym`) has 8 letters and the longest number 7 digits.
    let end = text.bytes().take(10).position(|b| b == b';')?;
    let body = &text[..end];
    let character = match body.strip_prefix('#') {
        Some(number) => numeric(number)?,
        None => Some(named(body)?),
    };
    Some((character, end + 1))
}

/// `Some(None)` for a control character or noncharacter, which is dropped.
fn numeric(number: &str) -> Option<Option<char>> {
    let code = match number.strip_prefix(['x', 'X']) {
        Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            u32::from_str_radix(hex, 16).ok()?
        }
        Some(_) => return None,
        None if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) => {
            number.parse().ok()?
        }
        None => return None,
    };
    match code {
        0 => None,
        160 => Some(Some(' ')),
        128..=159 => WINDOWS_1252[(code - 128) as usize].map(Some),
        0x1..=0x8 | 0xB | 0xE..=0x1F | 0x7F | 0xFDD0..=0xFDEF => Some(None),
        _ if code & 0xFFFE == 0xFFFE && code <= 0x10FFFF => Some(None),
        _ => char::from_u32(code).map(Some),
    }
}

fn named(name: &str) -> Option<char> {
    if name == "nbsp" {
        return Some(' ');
    }
    NAMED
        .iter()
        .find(|(candidate, _)| *candidate == name)
        .map(|&(_, character)| character)
}

/// Code points 128–159 as Windows-1252 reads those bytes (HTML5's remapping of numeric
/// references); `None` where Windows-1252 has no character either.
const WINDOWS_1252: [Option<char>; 32] = [
    Some('€'),
    None,
    Some('‚'),
    Some('ƒ'),
    Some('„'),
    Some('…'),
    Some('†'),
    Some('‡'),
    Some('ˆ'),
    Some('‰'),
    Some('Š'),
    Some('‹'),
    Some('Œ'),
    None,
    Some('Ž'),
    None,
    None,
    Some('‘'),
    Some('’'),
    Some('“'),
    Some('”'),
    Some('•'),
    Some('–'),
    Some('—'),
    Some('˜'),
    Some('™'),
    Some('š'),
    Some('›'),
    Some('œ'),
    None,
    Some('ž'),
    Some('Ÿ'),
];

/// HTML 4's named references (Latin-1, special characters and symbols) and `&apos;`,
/// `&nbsp;` aside. Names are case-sensitive (`&Auml;` is `Ä`, `&auml;` is `ä`).
const NAMED: &[(&str, char)] = &[
    ("quot", '"'),
    ("amp", '&'),
    ("apos", '\''),
    ("lt", '<'),
    ("gt", '>'),
    ("iexcl", '¡'),
    ("cent", '¢'),
    ("pound", '£'),
    ("curren", '¤'),
    ("yen", '¥'),
    ("brvbar", '¦'),
    ("sect", '§'),
    ("uml", '¨'),
    ("copy", '©'),
    ("ordf", 'ª'),
    ("laquo", '«'),
    ("not", '¬'),
    ("shy", '\u{ad}'),
    ("reg", '®'),
    ("macr", '¯'),
    ("deg", '°'),
    ("plusmn", '±'),
    ("sup2", '²'),
    ("sup3", '³'),
    ("acute", '´'),
    ("micro", 'µ'),
    ("para", '¶'),
    ("middot", '·'),
    ("cedil", '¸'),
    ("sup1", '¹'),
    ("ordm", 'º'),
    ("raquo", '»'),
    ("frac14", '¼'),
    ("frac12", '½'),
    ("frac34", '¾'),
    ("iquest", '¿'),
    ("Agrave", 'À'),
    ("Aacute", 'Á'),
    ("Acirc", 'Â'),
    ("Atilde", 'Ã'),
    ("Auml", 'Ä'),
    ("Aring", 'Å'),
    ("AElig", 'Æ'),
    ("Ccedil", 'Ç'),
    ("Egrave", 'È'),
    ("Eacute", 'É'),
    ("Ecirc", 'Ê'),
    ("Euml", 'Ë'),
    ("Igrave", 'Ì'),
    ("Iacute", 'Í'),
    ("Icirc", 'Î'),
    ("Iuml", 'Ï'),
    ("ETH", 'Ð'),
    ("Ntilde", 'Ñ'),
    ("Ograve", 'Ò'),
    ("Oacute", 'Ó'),
    ("Ocirc", 'Ô'),
    ("Otilde", 'Õ'),
    ("Ouml", 'Ö'),
    ("times", '×'),
    ("Oslash", 'Ø'),
    ("Ugrave", 'Ù'),
    ("Uacute", 'Ú'),
    ("Ucirc", 'Û'),
    ("Uuml", 'Ü'),
    ("Yacute", 'Ý'),
    ("THORN", 'Þ'),
    ("szlig", 'ß'),
    ("agrave", 'à'),
    ("aacute", 'á'),
    ("acirc", 'â'),
    ("atilde", 'ã'),
    ("auml", 'ä'),
    ("aring", 'å'),
    ("aelig", 'æ'),
    ("ccedil", 'ç'),
    ("egrave", 'è'),
    ("eacute", 'é'),
    ("ecirc", 'ê'),
    ("euml", 'ë'),
    ("igrave", 'ì'),
    ("iacute", 'í'),
    ("icirc", 'î'),
    ("iuml", 'ï'),
    ("eth", 'ð'),
    ("ntilde", 'ñ'),
    ("ograve", 'ò'),
    ("oacute", 'ó'),
    ("ocirc", 'ô'),
    ("otilde", 'õ'),
    ("ouml", 'ö'),
    ("divide", '÷'),
    ("oslash", 'ø'),
    ("ugrave", 'ù'),
    ("uacute", 'ú'),
    ("ucirc", 'û'),
    ("uuml", 'ü'),
    ("yacute", 'ý'),
    ("thorn", 'þ'),
    ("yuml", 'ÿ'),
    ("OElig", 'Œ'),
    ("oelig", 'œ'),
    ("Scaron", 'Š'),
    ("scaron", 'š'),
    ("Yuml", 'Ÿ'),
    ("fnof", 'ƒ'),
    ("circ", 'ˆ'),
    ("tilde", '˜'),
    ("Alpha", 'Α'),
    ("Beta", 'Β'),
    ("Gamma", 'Γ'),
    ("Delta", 'Δ'),
    ("Omega", 'Ω'),
    ("alpha", 'α'),
    ("beta", 'β'),
    ("gamma", 'γ'),
    ("delta", 'δ'),
    ("lambda", 'λ'),
    ("mu", 'μ'),
    ("pi", 'π'),
    ("sigma", 'σ'),
    ("omega", 'ω'),
    ("ensp", '\u{2002}'),
    ("emsp", '\u{2003}'),
    ("thinsp", '\u{2009}'),
    ("zwnj", '\u{200c}'),
    ("zwj", '\u{200d}'),
    ("lrm", '\u{200e}'),
    ("rlm", '\u{200f}'),
    ("ndash", '–'),
    ("mdash", '—'),
    ("lsquo", '‘'),
    ("rsquo", '’'),
    ("sbquo", '‚'),
    ("ldquo", '“'),
    ("rdquo", '”'),
    ("bdquo", '„'),
    ("dagger", '†'),
    ("Dagger", '‡'),
    ("bull", '•'),
    ("hellip", '…'),
    ("permil", '‰'),
    ("prime", '′'),
    ("Prime", '″'),
    ("lsaquo", '‹'),
    ("rsaquo", '›'),
    ("oline", '‾'),
    ("frasl", '⁄'),
    ("euro", '€'),
    ("trade", '™'),
    ("larr", '←'),
    ("uarr", '↑'),
    ("rarr", '→'),
    ("darr", '↓'),
    ("harr", '↔'),
    ("minus", '−'),
    ("infin", '∞'),
    ("asymp", '≈'),
    ("ne", '≠'),
    ("le", '≤'),
    ("ge", '≥'),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_numeric_and_blank_references_decode() {
        assert_eq!(
            decode_html_entities("vollst&auml;ndiger name"),
            "vollständiger name"
        );
        assert_eq!(
            decode_html_entities("&Auml;rzte &amp; &quot;x&quot;"),
            "Ärzte & \"x\""
        );
        assert_eq!(decode_html_entities("&#246;&#xF6;&#XF6;"), "ööö");
        assert_eq!(decode_html_entities("it&#146;s"), "it’s");
        assert_eq!(decode_html_entities("&nbsp;&#160;&#xa0;"), "   ");
        assert_eq!(decode_html_entities("5&nbsp;000&deg;C"), "5 000°C");
        assert_eq!(decode_html_entities("a&#1;b&#xFFFF;c&#x10FFFE;"), "abc");
    }

    /// Python's `html.unescape` decoded the same references
    /// (`tests/reference/html_entities_reference.py`).
    #[test]
    fn decodings_match_pythons_html_unescape() {
        let fixture = include_str!("../../../tests/fixtures/html_entities.tsv");
        let mut cases = 0;
        for line in fixture.lines() {
            let (reference, escaped) = line.split_once('\t').expect("reference<TAB>decoded");
            let expected = escaped
                .replace("\\\\", "\u{0}")
                .replace("\\t", "\t")
                .replace("\\n", "\n")
                .replace('\u{0}', "\\");
            assert_eq!(decode_html_entities(reference), expected, "{reference}");
            cases += 1;
        }
        assert!(cases > 400, "{cases} cases");
    }

    #[test]
    fn what_is_no_reference_stays() {
        for text in [
            "AT&T",
            "a & b",
            "&",
            "&;",
            "&#;",
            "&#x;",
            "&#12a;",
            "&#0;",
            "&#xD800;",
            "&#1114112;",
            "&#129;",
            "&unknown;",
            "&auml",
            "&AUML;",
            "&averyveryverylongname;",
        ] {
            assert_eq!(decode_html_entities(text), text, "{text}");
        }
        assert!(matches!(decode_html_entities("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn references_beside_each_other_and_at_the_ends() {
        assert_eq!(decode_html_entities("&lt;&gt;"), "<>");
        assert_eq!(decode_html_entities("&&amp;&"), "&&&");
        assert_eq!(decode_html_entities("x&amp;amp;"), "x&amp;");
        assert_eq!(decode_html_entities("ü&szlig;"), "üß");
    }

    #[test]
    fn every_name_is_unique_and_decodes() {
        for (i, (name, character)) in NAMED.iter().enumerate() {
            assert!(
                NAMED[..i].iter().all(|(other, _)| other != name),
                "{name} twice"
            );
            assert_eq!(
                decode_html_entities(&format!("&{name};")),
                character.to_string()
            );
        }
    }
}
