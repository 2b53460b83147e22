//! Data specifications: `NAME=FORMAT:PATH[,PATH…][#SPLIT]` names a label namespace, the format
//! its data is in and where it lies, e.g.
//! `wikitables=turl-csv:datasets/wikitables-turl-subset/train_wikitables_subset_20.csv.gz` or
//! `t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#train`. A `labels` set saved in Windows-1252
//! says so after its format: `mine=labels;encoding=windows-1252:tables,labels.csv`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::dataset::{DatasetFormat, LoadedData, Split, load_tables_encoded};
use crate::encoding::TextEncoding;
use crate::error::TableError;

/// Where a dataset lies and how to read it: `NAME=FORMAT[;encoding=ENCODING]:PATH[,PATH…][#SPLIT]`.
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
    /// The text encoding of a `labels` set's files (UTF-8 unless the spec says otherwise).
    #[serde(default, skip_serializing_if = "is_utf8")]
    pub encoding: TextEncoding,
}

fn is_utf8(encoding: &TextEncoding) -> bool {
    *encoding == TextEncoding::Utf8
}

impl FromStr for DataSpec {
    type Err = TableError;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| TableError::Spec {
            spec: spec.to_string(),
            reason: format!(
                "{reason} (expected NAME=FORMAT[;encoding=ENCODING]:PATH[,PATH...][#SPLIT])"
            ),
        };
        let (namespace, rest) = spec.split_once('=').ok_or_else(|| bad("no `=`"))?;
        let (format, rest) = rest.split_once(':').ok_or_else(|| bad("no `:`"))?;
        let (format, encoding) = match format.split_once(';') {
            None => (format, TextEncoding::Utf8),
            Some((format, option)) => match option.split_once('=') {
                Some(("encoding", name)) => (format, name.parse().map_err(|e: String| bad(&e))?),
                _ => return Err(bad(&format!("unknown format option `{option}`"))),
            },
        };
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
        let format: DatasetFormat = format.parse().map_err(|e: String| bad(&e))?;
        if encoding != TextEncoding::Utf8 && format != DatasetFormat::Labels {
            // Each benchmark's reader knows its files' encoding.
            return Err(bad(&format!(
                "an encoding is for the `labels` format, not `{format}`"
            )));
        }
        Ok(DataSpec {
            namespace: namespace.to_string(),
            format,
            paths,
            split,
            encoding,
        })
    }
}

impl fmt::Display for DataSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let paths: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        write!(f, "{}={}", self.namespace, self.format)?;
        if !is_utf8(&self.encoding) {
            write!(f, ";encoding={}", self.encoding)?;
        }
        write!(f, ":{}", paths.join(","))?;
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
    /// The reader's error; a folder without the format's layout, or an encoding asked of a
    /// format other than `labels`, names this spec too.
    pub fn load(&self) -> Result<LoadedData, TableError> {
        load_tables_encoded(self.format, &self.paths, self.split, self.encoding).map_err(
            |e| match e {
                TableError::Dataset { path, reason } => TableError::Spec {
                    spec: self.to_string(),
                    reason: format!("{}: {reason}", path.display()),
                },
                other => other,
            },
        )
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
    fn an_encoding_rides_with_the_format_and_round_trips() {
        let spec: DataSpec = "mine=labels;encoding=cp1252:t,l.csv".parse().unwrap();
        assert_eq!(spec.format, DatasetFormat::Labels);
        assert_eq!(spec.encoding, TextEncoding::Windows1252);
        assert_eq!(
            spec.to_string(),
            "mine=labels;encoding=windows-1252:t,l.csv"
        );
        assert_eq!(spec.to_string().parse::<DataSpec>().unwrap(), spec);
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(serde_json::from_str::<DataSpec>(&json).unwrap(), spec);
        // A run directory's config written before the field reads as UTF-8.
        let plain: DataSpec = "mine=labels:l.csv".parse().unwrap();
        let json = serde_json::to_string(&plain).unwrap();
        assert!(!json.contains("encoding"), "{json}");
        assert_eq!(serde_json::from_str::<DataSpec>(&json).unwrap(), plain);
        for bad in [
            "m=labels;encoding=utf-16:l.csv",
            "m=labels;charset=cp1252:l.csv",
        ] {
            let err = bad.parse::<DataSpec>().unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn an_encoding_is_refused_for_a_benchmark_format() {
        let spec = "t2d=t2d;encoding=latin-1:t2d.tar.gz";
        let message = spec.parse::<DataSpec>().unwrap_err().to_string();
        assert!(message.contains(spec), "{message}");
        assert!(
            message.contains("for the `labels` format, not `t2d`"),
            "{message}"
        );
        let message = load_tables_encoded(
            DatasetFormat::T2d,
            &[PathBuf::from("t2d.tar.gz")],
            Split::All,
            TextEncoding::Windows1252,
        )
        .unwrap_err()
        .to_string();
        let expected = "t2d.tar.gz: the windows-1252 encoding is for the `labels` format";
        assert!(message.contains(expected), "{message}");
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
