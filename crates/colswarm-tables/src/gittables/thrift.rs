//! A bounded walk over the thrift structs of a parquet file (the footer and every page header),
//! made before the parquet crate reads them.
//!
//! parquet 59 skips thrift values it does not keep (unknown fields, page statistics) with a
//! recursive skipper that treats the elements of a `list<bool>` (and the entries of a
//! `map<bool, bool>`) as taking no bytes, so a header of a few bytes claiming 2³¹ of them makes it
//! loop 2³¹ times without reading anything, and lists of such lists multiply that: a file of a
//! few kilobytes hangs the reader for hours (found by fuzzing). This walk follows the same bytes
//! the same way, counts the values visited, and refuses a struct that visits more than
//! [`STEPS_PER_BYTE`] values per byte it occupies; well-formed files visit at most about one
//! value per byte. Malformed thrift is left to the parquet crate to report: it stops there too.

/// Values a struct may visit per byte it occupies (plus [`STEPS_BASE`]).
pub(super) const STEPS_PER_BYTE: u64 = 8;
/// Values any struct may visit.
const STEPS_BASE: u64 = 1024;
/// How deep the walk follows nested values. The parquet crate skips at most 64 levels, counted
/// afresh inside each struct it parses itself: the walk goes deeper, so it never stops before
/// the parquet crate would.
const MAX_DEPTH: u32 = 128;

/// Why a walk stopped early.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Stop {
    /// The bytes are not thrift the parquet crate reads (or end too early): it reports them
    /// itself, having done no more than this walk.
    Malformed,
    /// The struct visits more values than its bytes can hold.
    TooManyValues {
        /// Values visited when the walk stopped.
        values: u64,
        /// Bytes read by then.
        bytes: usize,
    },
}

/// A walked struct: how many bytes it takes, the value of its i32 field 3 if any (the
/// `compressed_page_size` of a page header) and, when its field 2 is a list of structs (the
/// `schema` of a footer), that list's length and the first `num_children` (i32 field 5 of an
/// element) outside `0..=length`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Walked {
    pub(super) len: usize,
    pub(super) field_3: Option<i64>,
    pub(super) schema: Option<Schema>,
}

/// The schema list of a footer, as far as the checks need it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Schema {
    /// Elements in the list.
    pub(super) elements: i64,
    /// The first `num_children` outside `0..=elements`: the parquet crate allocates that many
    /// before it checks them.
    pub(super) bad_children: Option<i64>,
}

/// Walks one compact-protocol struct at the start of `bytes`.
pub(super) fn walk_struct(bytes: &[u8]) -> Result<Walked, Stop> {
    walk(bytes).0
}

/// Walks a footer like [`walk_struct`], and also returns the first schema element claiming a
/// bad `num_children`, even when the walk stops later: the parquet crate reads the schema in
/// order and allocates for that claim before it meets the later fault.
pub(super) fn walk_footer(bytes: &[u8]) -> (Result<Walked, Stop>, Option<Schema>) {
    walk(bytes)
}

fn walk(bytes: &[u8]) -> (Result<Walked, Stop>, Option<Schema>) {
    let mut walker = Walker {
        bytes,
        pos: 0,
        steps: 0,
        first_bad_schema: None,
    };
    let walked = walker
        .structure(MAX_DEPTH, Some(3), Some(2))
        .map(|collected| Walked {
            len: walker.pos,
            field_3: collected.int,
            schema: collected.schema,
        });
    (walked, walker.first_bad_schema)
}

/// What a struct's walk collects from its own fields.
#[derive(Default)]
struct Collected {
    int: Option<i64>,
    schema: Option<Schema>,
}

struct Walker<'a> {
    bytes: &'a [u8],
    pos: usize,
    steps: u64,
    /// The first schema list with a bad `num_children`, noted as soon as it is read.
    first_bad_schema: Option<Schema>,
}

/// Compact-protocol types, as the parquet crate numbers them.
const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;
const UUID: u8 = 13;

impl Walker<'_> {
    /// Counts `n` visited values, refusing the walk past the budget.
    fn visit(&mut self, n: u64) -> Result<(), Stop> {
        self.steps = self.steps.saturating_add(n);
        let budget = STEPS_BASE.saturating_add(STEPS_PER_BYTE.saturating_mul(self.pos as u64));
        if self.steps > budget {
            return Err(Stop::TooManyValues {
                values: self.steps,
                bytes: self.pos,
            });
        }
        Ok(())
    }

    fn byte(&mut self) -> Result<u8, Stop> {
        let byte = *self.bytes.get(self.pos).ok_or(Stop::Malformed)?;
        self.pos += 1;
        Ok(byte)
    }

    fn skip(&mut self, n: usize) -> Result<(), Stop> {
        let end = self.pos.checked_add(n).ok_or(Stop::Malformed)?;
        if end > self.bytes.len() {
            return Err(Stop::Malformed);
        }
        self.pos = end;
        Ok(())
    }

    /// An unsigned LEB128 varint (bits past 64 are dropped, as the parquet crate does).
    fn varint(&mut self) -> Result<u64, Stop> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f).wrapping_shl(shift);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
            shift = shift.saturating_add(7);
        }
    }

    fn zigzag(&mut self) -> Result<i64, Stop> {
        let value = self.varint()?;
        Ok((value >> 1) as i64 ^ -((value & 1) as i64))
    }

    /// A struct's fields up to its stop byte, collecting the value of i32 field `int_field` and
    /// the schema list in field `schema_field`.
    fn structure(
        &mut self,
        depth: u32,
        int_field: Option<i16>,
        schema_field: Option<i16>,
    ) -> Result<Collected, Stop> {
        let mut last_id: i16 = 0;
        let mut collected = Collected::default();
        loop {
            let header = self.byte()?;
            let kind = header & 0x0f;
            if kind == 0 {
                return Ok(collected);
            }
            let delta = header >> 4;
            let id = if delta == 0 {
                // Truncated to 16 bits, as the parquet crate reads it.
                self.zigzag()? as i16
            } else {
                last_id
                    .checked_add(i16::from(delta))
                    .ok_or(Stop::Malformed)?
            };
            last_id = id;
            // The parquet crate reads an i32 field whatever type its header declares, and
            // truncates the value to 32 bits: so do we (a fuzzed `num_children` was an i64).
            if Some(id) == int_field && matches!(kind, I16 | I32 | I64) {
                self.visit(1)?;
                collected.int = Some(i64::from(self.zigzag()? as i32));
            } else if Some(id) == schema_field && kind == LIST {
                collected.schema = Some(self.schema_list(depth - 1)?);
            } else {
                self.value(kind, depth - 1)?;
            }
        }
    }

    /// A list of schema elements: walked like any list, collecting each element's
    /// `num_children`.
    fn schema_list(&mut self, depth: u32) -> Result<Schema, Stop> {
        if depth == 0 {
            return Err(Stop::Malformed);
        }
        self.visit(1)?;
        let (element, size) = self.list_header()?;
        let mut schema = Schema {
            elements: i64::from(size.max(0)),
            bad_children: None,
        };
        if element != STRUCT {
            self.elements(&[element], size, depth)?;
            return Ok(schema);
        }
        for _ in 0..size.max(0) {
            if depth == 1 {
                return Err(Stop::Malformed);
            }
            self.visit(1)?;
            let children = self.structure(depth - 1, Some(5), None)?.int;
            if let Some(n) = children
                && !(0..=schema.elements).contains(&n)
                && schema.bad_children.is_none()
            {
                schema.bad_children = Some(n);
                self.first_bad_schema.get_or_insert(Schema {
                    elements: schema.elements,
                    bad_children: Some(n),
                });
            }
        }
        Ok(schema)
    }

    /// A list or set header: element type and size (0 for the empty-list byte).
    fn list_header(&mut self) -> Result<(u8, i32), Stop> {
        let header = self.byte()?;
        if header == 0 {
            return Ok((BYTE, 0));
        }
        let element = element_kind(header & 0x0f)?;
        let size = match header >> 4 {
            15 => i32::try_from(self.varint()?).map_err(|_| Stop::Malformed)?,
            n => i32::from(n),
        };
        Ok((element, size))
    }

    /// One value of type `kind`, the way the parquet crate skips it.
    fn value(&mut self, kind: u8, depth: u32) -> Result<(), Stop> {
        if depth == 0 {
            return Err(Stop::Malformed);
        }
        self.visit(1)?;
        match kind {
            // A boolean field's value is in its header.
            BOOL_TRUE | BOOL_FALSE => Ok(()),
            BYTE => self.skip(1),
            I16 | I32 | I64 => self.varint().map(drop),
            DOUBLE => self.skip(8),
            BINARY => {
                let len = usize::try_from(self.varint()?).map_err(|_| Stop::Malformed)?;
                self.skip(len)
            }
            STRUCT => self.structure(depth, None, None).map(drop),
            LIST | SET => {
                let (element, size) = self.list_header()?;
                self.elements(&[element], size, depth)
            }
            MAP => {
                let size = i32::try_from(self.varint()?).map_err(|_| Stop::Malformed)?;
                if size <= 0 {
                    return Ok(());
                }
                let kinds = self.byte()?;
                let key = element_kind(kinds >> 4)?;
                let value = element_kind(kinds & 0x0f)?;
                self.elements(&[key, value], size, depth)
            }
            UUID => self.skip(16),
            _ => Err(Stop::Malformed),
        }
    }

    /// `size` repetitions of values of `kinds`. Booleans take no bytes here (the parquet crate's
    /// reading): repetitions of booleans only are counted at once instead of walked.
    fn elements(&mut self, kinds: &[u8], size: i32, depth: u32) -> Result<(), Stop> {
        let size = u64::try_from(size).unwrap_or(0);
        if kinds.iter().all(|k| *k == BOOL_TRUE) {
            return self.visit(size.saturating_mul(kinds.len() as u64));
        }
        for _ in 0..size {
            for kind in kinds {
                self.value(*kind, depth - 1)?;
            }
        }
        Ok(())
    }
}

/// A list, set or map element type: 1 and 2 are both booleans (as the parquet crate reads them).
fn element_kind(nibble: u8) -> Result<u8, Stop> {
    match nibble {
        BOOL_TRUE | BOOL_FALSE => Ok(BOOL_TRUE),
        BYTE..=UUID => Ok(nibble),
        _ => Err(Stop::Malformed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_header_gives_its_length_and_compressed_size() {
        // type = 0 (i32), uncompressed = 10, compressed = 7, then a struct field holding an i32.
        let bytes = [
            0x15, 0x00, 0x15, 0x14, 0x15, 0x0e, 0x2c, 0x15, 0x02, 0x00, 0x00, 0xff,
        ];
        assert_eq!(
            walk_struct(&bytes),
            Ok(Walked {
                len: 11,
                field_3: Some(7),
                schema: None,
            })
        );
    }

    #[test]
    fn a_huge_boolean_list_is_refused() {
        // Field 1: list of 2^31 - 1 booleans in 7 bytes.
        let bytes = [0x19, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00];
        assert!(matches!(
            walk_struct(&bytes),
            Err(Stop::TooManyValues { .. })
        ));
        // A short one is fine.
        assert!(walk_struct(&[0x19, 0x31, 0x00]).is_ok());
    }

    #[test]
    fn schema_children_are_checked_against_the_schema() {
        // Field 2: a list of two structs whose field 5 (num_children) is 1, then a bad claim.
        let cases: [(&[u8], i64); 2] = [
            // An i32 field: 2^30.
            (
                &[
                    0x29, 0x2c, 0x55, 0x02, 0x00, 0x55, 0x80, 0x80, 0x80, 0x80, 0x08, 0x00, 0x00,
                ],
                1 << 30,
            ),
            // The fuzzer's 11 GB file: field 5 declared i64 (type 6), zigzag 10,066,329,598,
            // which the parquet crate reads as the i32 1,476,395,006.
            (
                &[
                    0x29, 0x2c, 0x55, 0x02, 0x00, 0x56, 0xfc, 0xff, 0xff, 0xff, 0x4a, 0x00, 0x00,
                ],
                1_476_395_006,
            ),
        ];
        for (bytes, claim) in cases {
            let walked = walk_struct(bytes).unwrap();
            assert_eq!(
                walked.schema,
                Some(Schema {
                    elements: 2,
                    bad_children: Some(claim)
                })
            );
        }
    }

    #[test]
    fn a_bad_num_children_is_reported_even_when_the_footer_breaks_later() {
        // The schema's second element claims 2^30 children; the footer's stop byte is missing.
        let bytes = [
            0x29, 0x2c, 0x55, 0x02, 0x00, 0x55, 0x80, 0x80, 0x80, 0x80, 0x08, 0x00,
        ];
        let (walked, bad) = walk_footer(&bytes);
        assert_eq!(walked, Err(Stop::Malformed));
        assert_eq!(
            bad,
            Some(Schema {
                elements: 2,
                bad_children: Some(1 << 30)
            })
        );
    }

    #[test]
    fn truncated_or_deep_input_is_left_to_the_parquet_crate() {
        assert_eq!(walk_struct(&[0x15]), Err(Stop::Malformed));
        // Structs nested past the skip depth.
        let deep: Vec<u8> = std::iter::repeat_n(0x1c, 100).collect();
        assert_eq!(walk_struct(&deep), Err(Stop::Malformed));
    }
}
