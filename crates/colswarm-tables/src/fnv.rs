//! 64-bit FNV-1a: a fixed, dependency-free hash, the same on every platform, run and Rust
//! version (unlike `DefaultHasher`). Every hash-drawn split, sample and n-gram bucket of the
//! project comes from it, so that a table lands in the same split and a column's n-grams in the
//! same buckets everywhere.

/// FNV-1a's offset basis: the hash of no bytes.
pub(crate) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The FNV-1a hash of `bytes`.
///
/// ```
/// assert_eq!(colswarm_tables::fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
/// ```
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(FNV_OFFSET, |hash, &b| fnv1a_step(hash, b))
}

/// One byte more of an FNV-1a hash: `fnv1a_step(fnv1a(a), b) == fnv1a(a ++ [b])`, for
/// hashing every prefix of a run of bytes at once.
pub(crate) fn fnv1a_step(hash: u64, byte: u8) -> u64 {
    (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_test_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn a_step_extends_the_hash_by_one_byte() {
        assert_eq!(fnv1a_step(fnv1a(b"fooba"), b'r'), fnv1a(b"foobar"));
    }
}
