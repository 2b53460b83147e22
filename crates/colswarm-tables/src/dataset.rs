//! Benchmark data sets on disk: their formats ([`DatasetFormat`]), the reader each format is
//! read with ([`load_tables`]), and a documented hash split ([`Split`]) for sets that ship
//! without one. A new format is a reader module, a variant here and an arm of [`load_tables`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::compressed::extension_uncompressed;
use crate::encoding::TextEncoding;
use crate::error::{Result, TableError};
use crate::fnv::fnv1a;
use crate::label_set::LabelSet;
use crate::labelled::read_labelled_paths;
use crate::options::ReadOptions;
use crate::sato_cv::{SatoCvOptions, read_sato_cv_folds};
use crate::semtab::{SemTabLayout, load_semtab};
use crate::sotab::load_sotab_split;
use crate::t2d::load_t2d;
use crate::table::Table;
use crate::turl::{read_wikitables_csv, wikitables_label_set};

/// The on-disk formats of `datasets/` (and of the upstream benchmarks they come from).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetFormat {
    /// TURL WikiTables as TabAnnGPT's CSV (`table_id, …, label`): multi-label CTA.
    TurlCsv,
    /// Sato / Doduo cross-validation CSV folds (GitTables SemTab'22): single-label CTA.
    SatoCv,
    /// T2D gold standard (TAIPAN layout): CPA from the subject column, and column properties.
    T2d,
    /// SOTAB V2: `*.json.gz` tables with CTA/CPA ground-truth CSVs.
    Sotab,
    /// A SemTab round: `tables/`, `targets/`, `gt/`.
    Semtab,
    /// Your own labels: `labels.csv` rows `table,column,label` over a folder of table files
    /// ([`crate::read_labelled_tables`]). Paths: `[TABLES_DIR,]LABELS.csv`; without a folder
    /// the tables lie beside the labels file.
    Labels,
}

impl DatasetFormat {
    /// All formats, in the order the command line lists them.
    pub const ALL: [DatasetFormat; 6] = [
        DatasetFormat::TurlCsv,
        DatasetFormat::SatoCv,
        DatasetFormat::T2d,
        DatasetFormat::Sotab,
        DatasetFormat::Semtab,
        DatasetFormat::Labels,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            DatasetFormat::TurlCsv => "turl-csv",
            DatasetFormat::SatoCv => "sato-cv",
            DatasetFormat::T2d => "t2d",
            DatasetFormat::Sotab => "sotab",
            DatasetFormat::Semtab => "semtab",
            DatasetFormat::Labels => "labels",
        }
    }

    /// Whether the format's CTA ground truth allows several labels per column.
    pub fn multi_label_cta(self) -> bool {
        matches!(self, DatasetFormat::TurlCsv | DatasetFormat::Semtab)
    }

    /// Whether the format is a CPA benchmark first: evaluating it scores CPA unless asked
    /// otherwise (T2D's column types are DBpedia properties of the subject's class).
    pub fn cpa_first(self) -> bool {
        matches!(self, DatasetFormat::T2d)
    }
}

impl fmt::Display for DatasetFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DatasetFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DatasetFormat::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = DatasetFormat::ALL.iter().map(|f| f.name()).collect();
                format!(
                    "unknown format `{s}` (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// Which part of a set to keep.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Split {
    /// Every table.
    #[default]
    All,
    /// Tables outside the hash split's dev share.
    Train,
    /// The hash split's dev share: tables whose id hashes (FNV-1a 64) to 0 mod 5, about 20%.
    Dev,
    /// Tables whose id hashes to one of these residues mod 5 (bit `r` set: residue `r`), written
    /// `folds=1,2`: finer parts of the same hash split (`train` is folds 1–4, `dev` fold 0), e.g.
    /// to hold out part of a training set.
    Folds(u8),
    /// One of two halves of those folds, written `folds=1,2/half=0`: a table's half is the
    /// parity of its hash divided by 5, which does not depend on its fold. To fit something on
    /// one half of a held-out fold and score it on the other.
    Half {
        /// The folds, as in [`Split::Folds`].
        folds: u8,
        /// 0 or 1.
        half: u8,
    },
    /// A union of folds and halves of folds, written with `+`: `folds=0,2,4+folds=3/half=1`
    /// keeps folds 0, 2 and 4 and half 1 of fold 3 (a training set that leaves the other half of
    /// fold 3 out, to choose settings on). Bit `2·fold + half` is set for each part kept.
    Parts(u16),
}

impl Split {
    /// Whether a table with this id belongs to the split. The rule depends on the id alone, so
    /// it is stable across machines, orderings and subsets.
    pub fn contains(self, table_id: &str) -> bool {
        let hash = fnv1a(table_id.as_bytes());
        let fold = hash % 5;
        match self {
            Split::All => true,
            Split::Train => fold != 0,
            Split::Dev => fold == 0,
            Split::Folds(folds) => folds & (1 << fold) != 0,
            Split::Half { folds, half } => {
                folds & (1 << fold) != 0 && (hash / 5) % 2 == u64::from(half)
            }
            Split::Parts(parts) => parts & (1 << (2 * fold + (hash / 5) % 2)) != 0,
        }
    }

    /// The parts of the split as [`Split::Parts`]' bits.
    fn parts(self) -> u16 {
        let whole = |folds: u8| -> u16 {
            (0..5)
                .filter(|f| folds & (1 << f) != 0)
                .map(|f| 0b11 << (2 * f))
                .sum()
        };
        match self {
            Split::All => whole(0b11111),
            Split::Train => whole(0b11110),
            Split::Dev => whole(0b00001),
            Split::Folds(folds) => whole(folds),
            Split::Half { folds, half } => (0..5)
                .filter(|f| folds & (1 << f) != 0)
                .map(|f| 1 << (2 * f + u16::from(half)))
                .sum(),
            Split::Parts(parts) => parts,
        }
    }
}

impl FromStr for Split {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.contains('+') {
            let mut parts = 0u16;
            for part in s.split('+') {
                parts |= part
                    .trim()
                    .parse::<Split>()
                    .map_err(|e| format!("split `{s}`: {e}"))?
                    .parts();
            }
            // Whole folds only: the plain form.
            let folds: u8 = (0..5)
                .filter(|f| parts >> (2 * f) & 0b11 == 0b11)
                .map(|f| 1 << f)
                .sum();
            return Ok(if Split::Folds(folds).parts() == parts {
                Split::Folds(folds)
            } else {
                Split::Parts(parts)
            });
        }
        match s {
            "all" => Ok(Split::All),
            "train" => Ok(Split::Train),
            "dev" => Ok(Split::Dev),
            _ => match s.strip_prefix("folds=") {
                Some(list) if list.contains("/half=") => {
                    let (list, half) = list.split_once("/half=").unwrap_or((list, ""));
                    let Ok(Split::Folds(folds)) = format!("folds={list}").parse::<Split>() else {
                        return Err(format!(
                            "split `{s}`: `{list}` is not a list of folds 0 to 4"
                        ));
                    };
                    match half {
                        "0" | "1" => Ok(Split::Half {
                            folds,
                            half: u8::from(half == "1"),
                        }),
                        _ => Err(format!("split `{s}`: a half is 0 or 1, not `{half}`")),
                    }
                }
                Some(list) => {
                    let mut folds = 0u8;
                    for fold in list.split(',') {
                        match fold.trim().parse::<u8>() {
                            Ok(f) if f < 5 => folds |= 1 << f,
                            _ => {
                                return Err(format!(
                                    "split `{s}`: `{fold}` is not a fold (folds are 0 to 4)"
                                ));
                            }
                        }
                    }
                    Ok(Split::Folds(folds))
                }
                None => Err(format!(
                    "unknown split `{s}` (expected all, train, dev, folds=I,J,… with folds 0 to 4, \
                     folds=I,J,…/half=H with H 0 or 1, or a union of folds and halves joined \
                     by `+`)"
                )),
            },
        }
    }
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Split::All => f.write_str("all"),
            Split::Train => f.write_str("train"),
            Split::Dev => f.write_str("dev"),
            Split::Folds(folds) => {
                let list: Vec<String> = (0..5)
                    .filter(|fold| folds & (1 << fold) != 0)
                    .map(|fold| fold.to_string())
                    .collect();
                write!(f, "folds={}", list.join(","))
            }
            Split::Half { folds, half } => write!(f, "{}/half={half}", Split::Folds(*folds)),
            Split::Parts(parts) => {
                let folds_where = |pattern: u16| -> u8 {
                    (0..5)
                        .filter(|fold| parts >> (2 * fold) & 0b11 == pattern)
                        .map(|fold| 1 << fold)
                        .sum()
                };
                let written: Vec<String> = [
                    (folds_where(0b11), None),
                    (folds_where(0b01), Some(0)),
                    (folds_where(0b10), Some(1)),
                ]
                .into_iter()
                .filter(|(folds, _)| *folds != 0)
                .map(|(folds, half)| match half {
                    None => Split::Folds(folds).to_string(),
                    Some(half) => Split::Half { folds, half }.to_string(),
                })
                .collect();
                f.write_str(&written.join("+"))
            }
        }
    }
}

/// Labelled tables of one format, with the label sets the format defines.
#[derive(Clone, Debug)]
pub struct LoadedData {
    /// The tables, labels attached to their columns and CPA targets.
    pub tables: Vec<Table>,
    /// The CTA label set: the format's own label file where it has one, else every CTA label
    /// in the data (sorted).
    pub cta_labels: LabelSet,
    /// Every CPA label in the data (sorted).
    pub cpa_labels: LabelSet,
}

/// Reads the labelled tables of `format` at `paths` (files or directories, as the format
/// lays them out) and keeps `split`. Text is UTF-8; see [`load_tables_encoded`] for a
/// `labels` set saved in Windows-1252.
pub fn load_tables(format: DatasetFormat, paths: &[PathBuf], split: Split) -> Result<LoadedData> {
    load_tables_encoded(format, paths, split, TextEncoding::Utf8)
}

/// [`load_tables`] with the text encoding of a `labels` set: its labels file and the CSV and
/// TSV tables it names, as `fine-tune --encoding` reads them.
///
/// # Errors
/// Besides [`load_tables`]' errors, [`TableError::Dataset`] naming the first path when an
/// encoding other than UTF-8 is asked of another format: each benchmark's reader knows its
/// own files' encoding.
pub fn load_tables_encoded(
    format: DatasetFormat,
    paths: &[PathBuf],
    split: Split,
    encoding: TextEncoding,
) -> Result<LoadedData> {
    if encoding != TextEncoding::Utf8 && format != DatasetFormat::Labels {
        return Err(TableError::Dataset {
            path: paths.first().cloned().unwrap_or_default(),
            reason: format!(
                "the {encoding} encoding is for the `labels` format; `{}` data is read as its \
                 benchmark writes it",
                format.name()
            ),
        });
    }
    let options = ReadOptions::default();
    let mut own_cta_labels = None;
    let mut tables = Vec::new();
    if format == DatasetFormat::Labels {
        // Its paths are read together: a folder sets where the next labels file's tables lie.
        tables = read_labelled_paths(paths, encoding)?;
    }
    for path in paths {
        match format {
            DatasetFormat::Labels => {}
            DatasetFormat::TurlCsv => {
                tables.extend(read_wikitables_csv(path, &options)?);
                // The label file lies beside the CSV in datasets/; use it when it is there.
                if let Some(dir) = path.parent()
                    && dir.join("wikitables-2_all_labels.txt").is_file()
                {
                    own_cta_labels = Some(wikitables_label_set(dir)?);
                }
            }
            DatasetFormat::SatoCv => {
                let files = files_in(path, "csv")?;
                let data = read_sato_cv_folds(&files, &SatoCvOptions::gittables())?;
                tables.extend(data.folds.into_iter().flatten());
            }
            DatasetFormat::T2d => tables.extend(load_t2d(path, &options)?.tables),
            DatasetFormat::Sotab => {
                let (cta, cpa) = sotab_ground_truth(path)?;
                let split = load_sotab_split(path, cta.as_deref(), cpa.as_deref(), &options)?;
                tables.extend(split.tables);
            }
            DatasetFormat::Semtab => {
                let layout = semtab_layout(path)?;
                tables.extend(load_semtab(&layout, &options)?.tables);
            }
        }
    }
    tables.retain(|t| split.contains(&t.id));
    let cta_labels = own_cta_labels.unwrap_or_else(|| {
        LabelSet::sorted(
            tables
                .iter()
                .flat_map(|t| &t.columns)
                .flat_map(|c| c.labels.iter().cloned()),
        )
    });
    let cpa_labels = LabelSet::sorted(
        tables
            .iter()
            .flat_map(|t| &t.cpa_targets)
            .flat_map(|c| c.labels.iter().cloned()),
    );
    Ok(LoadedData {
        tables,
        cta_labels,
        cpa_labels,
    })
}

/// A file, or the files with this extension (gzipped or not) in a directory (sorted).
fn files_in(path: &Path, extension: &str) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| TableError::io(path, e))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| extension_uncompressed(p).is_some_and(|e| e == extension))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(TableError::Dataset {
            path: path.to_path_buf(),
            reason: format!("no .{extension} or .{extension}.gz file in this directory"),
        });
    }
    Ok(files)
}

/// SOTAB ground truth for a folder of tables: the `*cta*.csv` / `*cpa*.csv` beside the tables
/// or in the parent folder; where several match, the one naming the folder (`Test` →
/// `…_test_set.csv`).
fn sotab_ground_truth(dir: &Path) -> Result<(Option<PathBuf>, Option<PathBuf>)> {
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let mut candidates = Vec::new();
    for d in [Some(dir), dir.parent()].into_iter().flatten() {
        if let Ok(entries) = std::fs::read_dir(d) {
            candidates.extend(
                entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| extension_uncompressed(p).is_some_and(|e| e == "csv")),
            );
        }
    }
    candidates.sort();
    let pick = |task: &str| -> Result<Option<PathBuf>> {
        let matching: Vec<&PathBuf> = candidates
            .iter()
            .filter(|p| {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                name.to_lowercase().contains(task)
            })
            .collect();
        match matching.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some((*one).clone())),
            several => {
                let named: Vec<&&PathBuf> = several
                    .iter()
                    .filter(|p| {
                        let name = p.file_name().unwrap_or_default().to_string_lossy();
                        !folder.is_empty() && name.to_lowercase().contains(&folder)
                    })
                    .collect();
                match named.as_slice() {
                    [one] => Ok(Some((**one).clone())),
                    _ => Err(TableError::Dataset {
                        path: dir.to_path_buf(),
                        reason: format!(
                            "several {task} ground-truth files and none names the folder: {}",
                            several
                                .iter()
                                .map(|p| p.display().to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    }),
                }
            }
        }
    };
    Ok((pick("cta")?, pick("cpa")?))
}

/// A SemTab round folder: `tables/`, and `targets/` + `gt/` files named `*CTA*` / `*CPA*`.
fn semtab_layout(root: &Path) -> Result<SemTabLayout> {
    let find = |folder: &str, task: &str| -> Option<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(folder))
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().to_uppercase().contains(task))
            })
            .collect();
        files.sort();
        files.into_iter().next()
    };
    let tables_dir = root.join("tables");
    if !tables_dir.is_dir() {
        return Err(TableError::Dataset {
            path: root.to_path_buf(),
            reason: "a SemTab round needs a `tables/` folder".into(),
        });
    }
    Ok(SemTabLayout {
        tables_dir,
        cta_targets: find("targets", "CTA"),
        cta_gt: find("gt", "CTA"),
        cpa_targets: find("targets", "CPA"),
        cpa_gt: find("gt", "CPA"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_round_trip() {
        for format in DatasetFormat::ALL {
            assert_eq!(format.name().parse::<DatasetFormat>().unwrap(), format);
        }
        let err = "nope".parse::<DatasetFormat>().unwrap_err();
        assert!(err.contains("nope") && err.contains("turl-csv"), "{err}");
    }

    #[test]
    fn hash_split_partitions_ids_about_one_in_five() {
        let ids: Vec<String> = (0..5000).map(|i| format!("table-{i}")).collect();
        let dev = ids.iter().filter(|id| Split::Dev.contains(id)).count();
        let train = ids.iter().filter(|id| Split::Train.contains(id)).count();
        assert_eq!(dev + train, ids.len());
        assert!((900..1100).contains(&dev), "{dev}");
    }

    #[test]
    fn folds_refine_the_hash_split_and_round_trip() {
        let ids: Vec<String> = (0..5000).map(|i| format!("table-{i}")).collect();
        let folds: Vec<Split> = (0..5)
            .map(|f| format!("folds={f}").parse().unwrap())
            .collect();
        for id in &ids {
            // Every table lies in exactly one fold; fold 0 is `dev`, the others `train`.
            let in_folds: Vec<bool> = folds.iter().map(|f| f.contains(id)).collect();
            assert_eq!(in_folds.iter().filter(|&&b| b).count(), 1, "{id}");
            assert_eq!(in_folds[0], Split::Dev.contains(id), "{id}");
        }
        let rest: Split = "folds=2, 3,4".parse().unwrap();
        let one: Split = "folds=1".parse().unwrap();
        for id in &ids {
            assert_eq!(
                Split::Train.contains(id),
                one.contains(id) || rest.contains(id)
            );
        }
        assert_eq!(rest.to_string(), "folds=2,3,4");
        for bad in ["folds=", "folds=5", "folds=1,x", "folds"] {
            let err = bad.parse::<Split>().unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn the_two_halves_of_folds_partition_them_about_evenly() {
        let ids: Vec<String> = (0..5000).map(|i| format!("table-{i}")).collect();
        let folds: Split = "folds=1,3".parse().unwrap();
        let halves: Vec<Split> = ["folds=1,3/half=0", "folds=3,1/half=1"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let mut sizes = [0usize; 2];
        for id in &ids {
            let inside: Vec<bool> = halves.iter().map(|h| h.contains(id)).collect();
            assert_eq!(inside[0] || inside[1], folds.contains(id), "{id}");
            assert!(!(inside[0] && inside[1]), "{id}");
            for (size, &i) in sizes.iter_mut().zip(&inside) {
                *size += usize::from(i);
            }
        }
        let total = sizes[0] + sizes[1];
        assert!(
            sizes[0] * 10 > total * 4 && sizes[1] * 10 > total * 4,
            "{sizes:?}"
        );
        assert_eq!(halves[1].to_string(), "folds=1,3/half=1");
        for bad in ["folds=1/half=2", "folds=9/half=0", "folds=1/half="] {
            let err = bad.parse::<Split>().unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn a_union_keeps_exactly_its_folds_and_halves() {
        let ids: Vec<String> = (0..3000).map(|i| format!("table-{i}")).collect();
        let union: Split = "folds=0,2+folds=3/half=1".parse().unwrap();
        let (whole, half): (Split, Split) = (
            "folds=0,2".parse().unwrap(),
            "folds=3/half=1".parse().unwrap(),
        );
        let other_half: Split = "folds=3/half=0".parse().unwrap();
        for id in &ids {
            assert_eq!(union.contains(id), whole.contains(id) || half.contains(id));
            assert!(!(union.contains(id) && other_half.contains(id)), "{id}");
        }
        assert_eq!(union.to_string(), "folds=0,2+folds=3/half=1");
        assert_eq!(union.to_string().parse::<Split>().unwrap(), union);
        // Both halves of a fold are the fold: the plain form.
        let both: Split = "folds=4/half=0+folds=4/half=1+dev".parse().unwrap();
        assert_eq!(both, Split::Folds(0b10001));
        let err = "folds=1+folds=7".parse::<Split>().unwrap_err();
        assert!(
            err.contains("folds=1+folds=7") && err.contains("`7`"),
            "{err}"
        );
    }
}
