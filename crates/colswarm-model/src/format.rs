//! The benchmark formats a model's label namespaces are trained from.

use std::fmt;
use std::str::FromStr;

use colswarm_swarm::LabelKind;

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
}

impl DatasetFormat {
    /// All formats, in the order the command line lists them.
    pub const ALL: [DatasetFormat; 5] = [
        DatasetFormat::TurlCsv,
        DatasetFormat::SatoCv,
        DatasetFormat::T2d,
        DatasetFormat::Sotab,
        DatasetFormat::Semtab,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            DatasetFormat::TurlCsv => "turl-csv",
            DatasetFormat::SatoCv => "sato-cv",
            DatasetFormat::T2d => "t2d",
            DatasetFormat::Sotab => "sotab",
            DatasetFormat::Semtab => "semtab",
        }
    }

    /// Whether the format's CTA ground truth allows several labels per column.
    pub fn cta_kind(self) -> LabelKind {
        match self {
            DatasetFormat::TurlCsv | DatasetFormat::Semtab => LabelKind::MultiLabel,
            _ => LabelKind::SingleLabel,
        }
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
