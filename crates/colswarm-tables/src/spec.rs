//! Data specifications: `NAME=FORMAT:PATH[,PATH…][#SPLIT]` names a label namespace, the format
//! its data is in and where it lies, e.g.
//! `wikitables=turl-csv:datasets/wikitables-turl-subset/train_wikitables_subset_20.csv.gz` or
//! `t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#train`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::dataset::{DatasetFormat, LoadedData, Split, load_tables};
use crate::error::TableError;

/// Where a dataset lies and how to read it: `NAME=FORMAT:PATH[,PATH…][#SPLIT]`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DataSpec {
    /// Label namespace (e.g. `wikitables`); labels of different namespaces never compete.
    pub namespace: String,
    /// On-disk format.
    pub format: DatasetFormat,
    /// Files or directories.
    pub paths: Vec<PathBuf>,
    /// Which tables to keep.
    #[serde(default)]
    pub split: Split,
}

impl FromStr for DataSpec {
    type Err = TableError;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| TableError::Spec {
            spec: spec.to_string(),
            reason: format!("{reason} (expected NAME=FORMAT:PATH[,PATH...][#SPLIT])"),
        };
        let (namespace, rest) = spec.split_once('=').ok_or_else(|| bad("no `=`"))?;
        let (format, rest) = rest.split_once(':').ok_or_else(|| bad("no `:`"))?;
        let (paths, split) = match rest.rsplit_once('#') {
            Some((paths, split)) => (paths, split.parse().map_err(|e: String| bad(&e))?),
            None => (rest, Split::All),
        };
        if namespace.is_empty() || namespace.contains(':') {
            return Err(bad("the name must be non-empty and free of `:`"));
        }
        let paths: Vec<PathBuf> = paths
            .split(',')
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .collect();
        if paths.is_empty() {
            return Err(bad("no path"));
        }
        Ok(DataSpec {
            namespace: namespace.to_string(),
            format: format.parse().map_err(|e: String| bad(&e))?,
            paths,
            split,
        })
    }
}

impl fmt::Display for DataSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let paths: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        write!(f, "{}={}:{}", self.namespace, self.format, paths.join(","))?;
        if self.split != Split::All {
            write!(f, "#{}", self.split)?;
        }
        Ok(())
    }
}

impl DataSpec {
    /// Reads the data the spec names.
    ///
    /// # Errors
    /// The reader's error; a folder without the format's layout names this spec too.
    pub fn load(&self) -> Result<LoadedData, TableError> {
        load_tables(self.format, &self.paths, self.split).map_err(|e| match e {
            TableError::Dataset { path, reason } => TableError::Spec {
                spec: self.to_string(),
                reason: format!("{}: {reason}", path.display()),
            },
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_round_trips_and_rejects_garbage() {
        let spec: DataSpec = "t2d=t2d:a/b,c#dev".parse().unwrap();
        assert_eq!(spec.namespace, "t2d");
        assert_eq!(spec.format, DatasetFormat::T2d);
        assert_eq!(spec.paths, [PathBuf::from("a/b"), PathBuf::from("c")]);
        assert_eq!(spec.split, Split::Dev);
        assert_eq!(spec.to_string().parse::<DataSpec>().unwrap(), spec);
        for bad in ["t2d", "=t2d:x", "a=nope:x", "a=t2d:", "a=t2d:x#later"] {
            let err = bad.parse::<DataSpec>().unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn folds_round_trip_in_a_spec() {
        let spec: DataSpec = "t2d=t2d:x#folds=4,0".parse().unwrap();
        assert_eq!(spec.to_string(), "t2d=t2d:x#folds=0,4");
        assert_eq!(spec.to_string().parse::<DataSpec>().unwrap(), spec);
    }

    #[test]
    fn a_folder_without_its_layout_names_the_spec_and_the_folder() {
        let dir = std::env::temp_dir().join(format!("colswarm-spec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec: DataSpec = format!("g=sato-cv:{}", dir.display()).parse().unwrap();
        let message = spec.load().unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(message.contains("dataset g=sato-cv:"), "{message}");
        assert!(message.contains("no .csv or .csv.gz file"), "{message}");
    }
}
