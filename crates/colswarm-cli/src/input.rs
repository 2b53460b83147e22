//! Tables to annotate: files, directories and stdin, in the formats `annotate` accepts.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use colswarm_tables::{
    CsvOptions, Delimiter, RaggedRows, ReadOptions, Table, read_csv_from_reader,
    read_csv_with_report, read_gittables_parquet, read_sotab_table,
};

/// Extensions `annotate` reads, by format.
const EXTENSIONS: [&str; 6] = ["csv", "tsv", "json", "gz", "parquet", "txt"];

/// Rows read from a delimited table: a uniform sample of this many, so tables of any length
/// are annotated in bounded memory (the model itself samples far fewer, see `serialize.json`).
pub const SAMPLE_ROWS: usize = 1000;

fn csv_options(path: &Path, lossy: bool) -> CsvOptions {
    let tsv = path.extension().is_some_and(|e| e == "tsv");
    CsvOptions {
        sample_rows: Some(SAMPLE_ROWS),
        read: ReadOptions {
            // Sampling bounds memory, so no row limit is needed; cells stay capped at 1 MiB
            // (an error, or a truncation with `lossy`).
            max_rows: usize::MAX,
            lossy,
            ..ReadOptions::default()
        },
        delimiter: if tsv {
            Delimiter::Byte(b'\t')
        } else {
            Delimiter::Detect
        },
        // Web tables are often ragged; pad them (the report says how many rows) rather than
        // refuse them.
        ragged_rows: RaggedRows::Pad,
        ..CsvOptions::default()
    }
}

/// Reads one table file, choosing the reader by extension; `lossy` repairs invalid UTF-8 and
/// truncates oversized cells instead of failing.
pub fn read_table(path: &Path, lossy: bool) -> Result<Table> {
    let name = path.to_string_lossy().to_lowercase();
    let options = ReadOptions {
        lossy,
        ..ReadOptions::default()
    };
    let table = if name.ends_with(".parquet") {
        read_gittables_parquet(path, None, &options)?.0
    } else if name.ends_with(".json.gz") || name.ends_with(".json") {
        read_sotab_table(path, &options)?
    } else {
        read_csv_with_report(path, &csv_options(path, lossy))?.0
    };
    Ok(table)
}

/// The files named (directories expanded to their table files, sorted), in the order given.
pub fn table_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        if input.as_os_str() == "-" {
            files.push(input.clone());
        } else if input.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(input)
                .with_context(|| format!("{}: cannot list the directory", input.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.is_file()
                        && p.extension()
                            .is_some_and(|e| EXTENSIONS.contains(&e.to_string_lossy().as_ref()))
                })
                .collect();
            found.sort();
            files.extend(found);
        } else if input.is_file() {
            files.push(input.clone());
        } else {
            bail!("{}: no such file or directory", input.display());
        }
    }
    if files.is_empty() {
        bail!("no table file among the inputs");
    }
    Ok(files)
}

/// Reads a CSV table from stdin.
pub fn read_stdin(lossy: bool) -> Result<Table> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .context("reading stdin")?;
    let path = Path::new("<stdin>");
    Ok(read_csv_from_reader(bytes.as_slice(), path, "stdin", &csv_options(path, lossy))?.0)
}

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
