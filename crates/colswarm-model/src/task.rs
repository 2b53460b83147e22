//! The two heads a namespace can belong to: column types and relations.

use serde::{Deserialize, Serialize};

/// Which head a namespace belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// Column type annotation.
    Cta,
    /// Column property annotation (relation to the subject column).
    Cpa,
}

impl std::fmt::Display for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Task::Cta => "cta",
            Task::Cpa => "cpa",
        })
    }
}

impl std::str::FromStr for Task {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cta" => Ok(Task::Cta),
            "cpa" => Ok(Task::Cpa),
            _ => Err(format!("unknown task `{s}` (expected cta or cpa)")),
        }
    }
}
