//! How a model reads tables: the serializer's budgets it was trained with, kept in its
//! directory's `serialize.json`.

use colswarm_swarm::manifest::ManifestVersion;
use colswarm_tables::SerializeConfig;
use serde::{Deserialize, Serialize};

/// File name of the serialization settings inside a model directory.
pub const SERIALIZE_FILE: &str = "serialize.json";

/// The budgets of [`SerializeConfig`] that a model is trained with (the serialization seed is
/// part of it, so annotation samples the same rows as evaluation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SerializeSettings {
    /// Most tokens of a serialized table.
    pub max_table_tokens: usize,
    /// Most rows sampled per table.
    pub max_rows: usize,
    /// Most bytes per cell.
    pub max_cell_bytes: usize,
    /// Sample cells repeated in each column query.
    pub query_cells: usize,
    /// Most bytes of the header inside a column query.
    pub query_header_bytes: usize,
    /// Most bytes of each sample cell inside a column query.
    pub query_cell_bytes: usize,
    /// Row-sampling seed.
    pub seed: u64,
}

/// `serialize.json` beside a `colswarm-swarm-v1` manifest: the query budgets may be missing
/// (files written before they existed), meaning the serializer's defaults of the time, 32 and
/// 16 bytes.
#[derive(Deserialize)]
struct SerializeSettingsV1 {
    max_table_tokens: usize,
    max_rows: usize,
    max_cell_bytes: usize,
    query_cells: usize,
    #[serde(default = "default_query_header_bytes")]
    query_header_bytes: usize,
    #[serde(default = "default_query_cell_bytes")]
    query_cell_bytes: usize,
    seed: u64,
}

impl From<SerializeSettingsV1> for SerializeSettings {
    fn from(v1: SerializeSettingsV1) -> Self {
        SerializeSettings {
            max_table_tokens: v1.max_table_tokens,
            max_rows: v1.max_rows,
            max_cell_bytes: v1.max_cell_bytes,
            query_cells: v1.query_cells,
            query_header_bytes: v1.query_header_bytes,
            query_cell_bytes: v1.query_cell_bytes,
            seed: v1.seed,
        }
    }
}

fn default_query_header_bytes() -> usize {
    32
}

fn default_query_cell_bytes() -> usize {
    16
}

impl Default for SerializeSettings {
    fn default() -> Self {
        // The shipped model's: a 128-token read of 8 rows, each column named by its index only.
        SerializeSettings {
            max_table_tokens: 128,
            max_rows: 8,
            max_cell_bytes: 24,
            query_cells: 0,
            query_header_bytes: 0,
            query_cell_bytes: default_query_cell_bytes(),
            seed: 0,
        }
    }
}

impl SerializeSettings {
    /// Parses `serialize.json` as laid out in a model directory of `version` (a v1 file is
    /// upgraded in memory).
    pub fn from_json(bytes: &[u8], version: ManifestVersion) -> serde_json::Result<Self> {
        match version {
            ManifestVersion::V2 | ManifestVersion::V3 => serde_json::from_slice(bytes),
            ManifestVersion::V1 => {
                serde_json::from_slice::<SerializeSettingsV1>(bytes).map(Into::into)
            }
        }
    }

    /// The serializer configuration.
    pub fn config(&self) -> SerializeConfig {
        SerializeConfig {
            max_table_tokens: self.max_table_tokens,
            max_rows: self.max_rows,
            max_cell_bytes: self.max_cell_bytes,
            min_cell_bytes: 8.min(self.max_cell_bytes),
            query_cells: self.query_cells,
            query_header_bytes: self.query_header_bytes,
            query_cell_bytes: self.query_cell_bytes,
            seed: self.seed,
            ..SerializeConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_tables::Table;

    #[test]
    fn the_default_reads_tables_as_the_shipped_model_does() {
        let shipped = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../models/colswarm-small/serialize.json"
        );
        let bytes = std::fs::read(shipped).unwrap();
        let settings = SerializeSettings::from_json(&bytes, ManifestVersion::V2).unwrap();
        assert_eq!(settings, SerializeSettings::default());
    }

    #[test]
    fn query_budgets_reach_the_serializer_and_old_settings_keep_the_defaults() {
        let v1 = br#"{"max_table_tokens":256,"max_rows":8,"max_cell_bytes":24,"query_cells":2,"seed":0}"#;
        let old = SerializeSettings::from_json(v1, ManifestVersion::V1).unwrap();
        assert_eq!((old.query_header_bytes, old.query_cell_bytes), (32, 16));
        // The current layout holds every field.
        let err = SerializeSettings::from_json(v1, ManifestVersion::V2).unwrap_err();
        assert!(err.to_string().contains("query_header_bytes"), "{err}");

        let short = SerializeSettings {
            query_cells: 0,
            query_header_bytes: 0,
            ..old
        };
        let config = short.config();
        assert_eq!((config.query_cells, config.query_header_bytes), (0, 0));
        let table = Table::from_rows(
            "cities",
            Some(vec!["name".into(), "population".into()]),
            vec![vec!["Oslo".into(), "709000".into()]],
        );
        let serialized = colswarm_tables::serialize_table(&table, &config);
        // <query>, the index, an empty header, </query>: the column is named by its index only.
        assert!(serialized.column_queries.iter().all(|q| q.len() == 5));
        let full = colswarm_tables::serialize_table(&table, &old.config());
        assert!(full.column_queries[1].len() > 5 + "population".len());
    }
}
