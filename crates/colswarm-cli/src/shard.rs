//! `--shard i/n`: one of n contiguous blocks of the input files.

/// `i/n` of `--shard`: shard `i` of `n` takes the `i`-th of `n` contiguous blocks of the
/// (sorted) input files, so shards are disjoint, cover every file, and their outputs
/// concatenated in shard order are exactly the unsharded output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard (0-based).
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parse = || -> Option<Shard> {
            let (i, n) = s.split_once('/')?;
            let (index, count) = (i.trim().parse().ok()?, n.trim().parse().ok()?);
            (count > 0 && index < count).then_some(Shard { index, count })
        };
        parse().ok_or_else(|| format!("shard `{s}`: expected i/n with 0 ≤ i < n"))
    }
}

impl Shard {
    /// The contiguous block of `n_items` this shard owns: shards in order concatenate to the
    /// whole list, in its order.
    pub fn range(&self, n_items: usize) -> std::ops::Range<usize> {
        let start = n_items * self.index / self.count;
        let end = n_items * (self.index + 1) / self.count;
        start..end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_in_order() {
        for n in [0, 1, 5, 17] {
            for count in 1..6 {
                let joined: Vec<usize> = (0..count)
                    .flat_map(|index| Shard { index, count }.range(n))
                    .collect();
                assert_eq!(joined, (0..n).collect::<Vec<_>>());
            }
        }
        assert!("3/3".parse::<Shard>().is_err());
        assert!("a/3".parse::<Shard>().is_err());
        assert_eq!("1/4".parse::<Shard>(), Ok(Shard { index: 1, count: 4 }));
    }
}
