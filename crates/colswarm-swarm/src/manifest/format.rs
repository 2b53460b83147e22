//! The layouts of `swarm.json` on disk, and the migration of older ones.
//!
//! - `colswarm-swarm-v3` ([`MANIFEST_FORMAT`], what [`Swarm::save`] writes): one list of
//!   specialists, each saying what it contributes (`"contributes": "state"`, fused into the
//!   primary's state, or `"answers"`, a whole model whose answers are mixed into the
//!   primary's), and the trained routing of the answering ones (`expert_routing`). Every field
//!   is present, an absent component or option written as `null`; a field missing or unknown
//!   is an error; a name listed twice is an error. The directory's `labels.json` and
//!   `serialize.json` hold every field too.
//! - `colswarm-swarm-v2` ([`MANIFEST_FORMAT_V2`]): the same, but the list holds the state
//!   specialists only; the answering ones (then called domain experts) and their routing are
//!   in a second file beside it, `experts.json` ([`super::experts`]), folded in when the
//!   manifest is read. Rewriting such a manifest writes v3 and removes `experts.json`.
//! - `colswarm-swarm-v1` ([`MANIFEST_FORMAT_V1`]): fields added over time may be missing, and
//!   mean what those files always meant (no head skip, no column n-grams, heads 256 wide, …).
//!   A v1 manifest is upgraded in memory when read; its files are never rewritten. Models that
//!   need a code path since removed (span pooling off, a second read, learned alignments,
//!   context n-grams, wide n-gram logits) are refused with the reason.
//!
//! [`Swarm::save`]: crate::Swarm::save

use colswarm_rwkv::RwkvConfig;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{ExpertRef, FileRef, SpecialistRef, SwarmManifest, WordFiles};
use crate::fusion::FusionMode;
use crate::heads::LabelKind;
use crate::ngram_embedding::ColumnNgramsConfig;
use crate::orchestrator::{HeadSkip, OrchestratorConfig};
use crate::word_vectors::ColumnWordsConfig;

/// The `format` of the manifests this version writes.
pub const MANIFEST_FORMAT: &str = "colswarm-swarm-v3";
/// The `format` of the second layout (experts listed apart), still read and rewritten as v3.
pub const MANIFEST_FORMAT_V2: &str = "colswarm-swarm-v2";
/// The `format` of the first layout, still read (and migrated in memory).
pub const MANIFEST_FORMAT_V1: &str = "colswarm-swarm-v1";

/// The layout a manifest (and the model directory around it) was read in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ManifestVersion {
    /// `colswarm-swarm-v1`: optional fields, upgraded in memory with their defaults.
    V1,
    /// `colswarm-swarm-v2`: every field present; the experts in `experts.json`.
    V2,
    /// `colswarm-swarm-v3`: every field present; one list of specialists.
    V3,
}

impl ManifestVersion {
    /// The manifest's `format` value of this layout.
    pub fn format(self) -> &'static str {
        match self {
            ManifestVersion::V1 => MANIFEST_FORMAT_V1,
            ManifestVersion::V2 => MANIFEST_FORMAT_V2,
            ManifestVersion::V3 => MANIFEST_FORMAT,
        }
    }

    /// Whether the directory's other files (`labels.json`, `serialize.json`) are in the current
    /// layout, so that the manifest may be rewritten as v3 in place.
    pub fn rewritable(self) -> bool {
        self != ManifestVersion::V1
    }
}

/// An `Option` field that must be present (as `null` when `None`): serde's derive takes a
/// missing `Option` as `None` unless the field has its own deserializer.
fn required<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// `colswarm-swarm-v3`: as v2, with one list of specialists and the experts' routing.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestV3 {
    format: String,
    config: ConfigV2,
    cta_labels: Vec<String>,
    cpa_labels: Vec<String>,
    primary: FileRef,
    #[serde(deserialize_with = "required")]
    router: Option<FileRef>,
    #[serde(deserialize_with = "required")]
    fusion: Option<FileRef>,
    cta_head: FileRef,
    cpa_head: FileRef,
    #[serde(deserialize_with = "required")]
    column_ngrams: Option<FileRef>,
    #[serde(deserialize_with = "required")]
    column_words: Option<WordFiles>,
    /// The state specialists first, then the answering ones: the router's order.
    specialists: Vec<SpecialistEntry>,
    /// The answering specialists' trained router and logit mix; `null`: their rules and the
    /// plain average.
    #[serde(deserialize_with = "required")]
    expert_routing: Option<FileRef>,
}

/// One specialist of a v3 manifest, by what it contributes.
#[derive(Serialize, Deserialize)]
#[serde(tag = "contributes", rename_all = "snake_case")]
enum SpecialistEntry {
    /// Its recurrent state, aligned and fused into the primary's before the primary answers.
    State(SpecialistRef),
    /// Its answers: a whole model whose logits are mixed into the primary's.
    Answers(ExpertRef),
}

impl SpecialistEntry {
    fn name(&self) -> &str {
        match self {
            SpecialistEntry::State(s) => &s.name,
            SpecialistEntry::Answers(e) => &e.name,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigV2 {
    primary: RwkvConfig,
    cta_labels: usize,
    cta_kind: LabelKind,
    cpa_labels: usize,
    fusion: FusionMode,
    threshold: f64,
    #[serde(deserialize_with = "required")]
    budget: Option<usize>,
    d_head_hidden: usize,
    #[serde(deserialize_with = "required")]
    column_ngrams: Option<NgramsV2>,
    #[serde(deserialize_with = "required")]
    head_skip: Option<HeadSkip>,
    /// Absent (false) in every model written before column fusion existed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    column_fusion: bool,
    /// Absent in every model written before word vectors existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    column_words: Option<WordsV2>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WordsV2 {
    dim: usize,
    max_cells: usize,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    table_topic: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NgramsV2 {
    buckets: u32,
    min_n: usize,
    max_n: usize,
    max_cells: usize,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    neighbours: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    value_stats: bool,
}

/// `colswarm-swarm-v1`, every field as lenient as the files written under it.
#[derive(Deserialize)]
struct ManifestV1 {
    config: ConfigV1,
    #[serde(default)]
    cta_labels: Vec<String>,
    #[serde(default)]
    cpa_labels: Vec<String>,
    primary: FileRef,
    // Written for every swarm, a placeholder where it had no specialists; absent or null is
    // read as the current layout reads it: no specialists, nothing to route or fuse.
    #[serde(default)]
    router: Option<FileRef>,
    #[serde(default)]
    fusion: Option<FileRef>,
    cta_head: FileRef,
    cpa_head: FileRef,
    #[serde(default)]
    column_ngrams: Option<FileRef>,
    #[serde(default)]
    wide_ngrams: Option<FileRef>,
    specialists: Vec<SpecialistRef>,
}

#[derive(Deserialize)]
struct ConfigV1 {
    primary: RwkvConfig,
    cta_labels: usize,
    cta_kind: LabelKind,
    cpa_labels: usize,
    #[serde(default = "v1_fusion")]
    fusion: FusionMode,
    #[serde(default = "v1_threshold")]
    threshold: f64,
    #[serde(default)]
    budget: Option<usize>,
    #[serde(default = "v1_d_head_hidden")]
    d_head_hidden: usize,
    #[serde(default)]
    alignment: Option<serde_json::Value>,
    #[serde(default)]
    column_pooling: Option<serde_json::Value>,
    #[serde(default)]
    column_ngrams: Option<NgramsV1>,
    #[serde(default)]
    head_skip: Option<HeadSkip>,
    #[serde(default)]
    wide_ngrams: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct NgramsV1 {
    #[serde(default = "v1_buckets")]
    buckets: u32,
    #[serde(default = "v1_min_n")]
    min_n: usize,
    #[serde(default = "v1_max_n")]
    max_n: usize,
    #[serde(default = "v1_max_cells")]
    max_cells: usize,
    #[serde(default)]
    context: Option<serde_json::Value>,
    #[serde(default)]
    neighbours: Option<bool>,
}

fn v1_fusion() -> FusionMode {
    FusionMode::WeightedSum
}
fn v1_threshold() -> f64 {
    0.5
}
fn v1_d_head_hidden() -> usize {
    256
}
fn v1_buckets() -> u32 {
    16384
}
fn v1_min_n() -> usize {
    2
}
fn v1_max_n() -> usize {
    4
}
fn v1_max_cells() -> usize {
    20
}

/// A v1 option this version has no code path for.
fn unsupported(what: &str) -> String {
    format!("the model was trained with {what}, which this version of colswarm no longer supports")
}

impl ManifestV1 {
    fn migrate(self) -> Result<SwarmManifest, String> {
        let c = self.config;
        if c.alignment.as_ref().is_some_and(|a| !a.is_null()) {
            return Err(unsupported("learned alignments (`--learned-alignment`)"));
        }
        match c
            .column_pooling
            .as_ref()
            .and_then(serde_json::Value::as_str)
        {
            Some("SpanMean") => {}
            Some("SecondRead") => return Err(unsupported("a second read (`--read-twice`)")),
            Some(other) => return Err(format!("unknown column pooling `{other}`")),
            None => return Err(unsupported("no span pooling (`--no-span-pooling`)")),
        }
        if c.wide_ngrams.as_ref().is_some_and(|w| !w.is_null()) || self.wide_ngrams.is_some() {
            return Err(unsupported("wide n-gram logits (`--wide-buckets`)"));
        }
        let column_ngrams = match c.column_ngrams {
            Some(n) if n.context.as_ref().is_some_and(|x| !x.is_null()) => {
                return Err(unsupported("context n-grams (`--context-ngrams`)"));
            }
            Some(n) => Some(NgramsV2 {
                buckets: n.buckets,
                min_n: n.min_n,
                max_n: n.max_n,
                max_cells: n.max_cells,
                neighbours: n.neighbours == Some(true),
                value_stats: false,
            }),
            None => None,
        };
        let config = ConfigV2 {
            primary: c.primary,
            cta_labels: c.cta_labels,
            cta_kind: c.cta_kind,
            cpa_labels: c.cpa_labels,
            fusion: c.fusion,
            threshold: c.threshold,
            budget: c.budget,
            d_head_hidden: c.d_head_hidden,
            column_ngrams,
            head_skip: c.head_skip,
            column_fusion: false,
            column_words: None,
        };
        Ok(SwarmManifest {
            version: ManifestVersion::V1,
            config: config.into(),
            cta_labels: self.cta_labels,
            cpa_labels: self.cpa_labels,
            primary: self.primary,
            router: self.router,
            fusion: self.fusion,
            cta_head: self.cta_head,
            cpa_head: self.cpa_head,
            column_ngrams: self.column_ngrams,
            column_words: None,
            specialists: self.specialists,
            experts: Vec::new(),
            expert_routing: None,
        })
    }
}

impl From<ConfigV2> for OrchestratorConfig {
    fn from(c: ConfigV2) -> Self {
        OrchestratorConfig::new(c.primary, c.cta_labels, c.cta_kind, c.cpa_labels)
            .with_fusion(c.fusion)
            .with_threshold(c.threshold)
            .with_budget(c.budget)
            .with_d_head_hidden(c.d_head_hidden)
            .with_column_ngrams(c.column_ngrams.map(|n| {
                ColumnNgramsConfig::new()
                    .with_buckets(n.buckets)
                    .with_min_n(n.min_n)
                    .with_max_n(n.max_n)
                    .with_max_cells(n.max_cells)
                    .with_neighbours(n.neighbours)
                    .with_value_stats(n.value_stats)
            }))
            .with_head_skip(c.head_skip)
            .with_column_fusion(c.column_fusion)
            .with_column_words(c.column_words.map(|w| {
                ColumnWordsConfig::new(w.dim)
                    .with_max_cells(w.max_cells)
                    .with_table_topic(w.table_topic)
            }))
    }
}

impl From<&OrchestratorConfig> for ConfigV2 {
    fn from(c: &OrchestratorConfig) -> Self {
        ConfigV2 {
            primary: c.primary.clone(),
            cta_labels: c.cta_labels,
            cta_kind: c.cta_kind,
            cpa_labels: c.cpa_labels,
            fusion: c.fusion,
            threshold: c.threshold,
            budget: c.budget,
            d_head_hidden: c.d_head_hidden,
            column_ngrams: c.column_ngrams.map(|n| NgramsV2 {
                buckets: n.buckets,
                min_n: n.min_n,
                max_n: n.max_n,
                max_cells: n.max_cells,
                neighbours: n.neighbours,
                value_stats: n.value_stats,
            }),
            head_skip: c.head_skip,
            column_fusion: c.column_fusion,
            column_words: c.column_words.map(|w| WordsV2 {
                dim: w.dim,
                max_cells: w.max_cells,
                table_topic: w.table_topic,
            }),
        }
    }
}

/// Written as `colswarm-swarm-v3`, whatever layout the manifest was read from.
impl Serialize for SwarmManifest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let specialists = (self.specialists.iter().cloned().map(SpecialistEntry::State))
            .chain(self.experts.iter().cloned().map(SpecialistEntry::Answers))
            .collect();
        ManifestV3 {
            format: MANIFEST_FORMAT.into(),
            config: (&self.config).into(),
            cta_labels: self.cta_labels.clone(),
            cpa_labels: self.cpa_labels.clone(),
            primary: self.primary.clone(),
            router: self.router.clone(),
            fusion: self.fusion.clone(),
            cta_head: self.cta_head.clone(),
            cpa_head: self.cpa_head.clone(),
            column_ngrams: self.column_ngrams.clone(),
            column_words: self.column_words.clone(),
            specialists,
            expert_routing: self.expert_routing.clone(),
        }
        .serialize(serializer)
    }
}

/// Reads any layout this version knows ([`ManifestVersion`]) by its `format`, migrating a v1
/// manifest; an unknown `format` is an error that names it.
impl<'de> Deserialize<'de> for SwarmManifest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = serde_json::Value::deserialize(deserializer)?;
        let format = value
            .get("format")
            .ok_or_else(|| D::Error::missing_field("format"))?;
        match format.as_str() {
            Some(MANIFEST_FORMAT) => ManifestV3::deserialize(value)
                .map_err(D::Error::custom)?
                .into_manifest(ManifestVersion::V3)
                .map_err(D::Error::custom),
            Some(MANIFEST_FORMAT_V2) => ManifestV3::deserialize(v2_as_v3(value)?)
                .map_err(D::Error::custom)?
                .into_manifest(ManifestVersion::V2)
                .map_err(D::Error::custom),
            Some(MANIFEST_FORMAT_V1) => ManifestV1::deserialize(value)
                .map_err(D::Error::custom)?
                .migrate()
                .map_err(D::Error::custom),
            _ => Err(D::Error::custom(format!(
                "unknown format {format} (this version reads `{MANIFEST_FORMAT}`, \
                 `{MANIFEST_FORMAT_V2}` and `{MANIFEST_FORMAT_V1}`)"
            ))),
        }
    }
}

/// A v2 manifest in the v3 layout it is a case of: every specialist contributes its state, no
/// expert routing is listed (the experts sat in `experts.json`), and `column_words`, which v2
/// manifests written before word vectors lack, is `null`.
fn v2_as_v3<E: serde::de::Error>(mut value: serde_json::Value) -> Result<serde_json::Value, E> {
    let Some(object) = value.as_object_mut() else {
        return Err(E::custom("a manifest is a JSON object"));
    };
    if object.contains_key("expert_routing") {
        return Err(E::unknown_field("expert_routing", &[]));
    }
    object.insert("expert_routing".into(), serde_json::Value::Null);
    object
        .entry("column_words")
        .or_insert(serde_json::Value::Null);
    if let Some(list) = object.get_mut("specialists").and_then(|s| s.as_array_mut()) {
        for entry in list.iter_mut().filter_map(|e| e.as_object_mut()) {
            if entry.contains_key("contributes") {
                return Err(E::unknown_field("contributes", &[]));
            }
            entry.insert("contributes".into(), "state".into());
        }
    }
    Ok(value)
}

impl ManifestV3 {
    /// The manifest in memory, read in `version`'s layout; refuses a name listed twice.
    fn into_manifest(self, version: ManifestVersion) -> Result<SwarmManifest, String> {
        if let Some(name) = first_repeated(self.specialists.iter().map(SpecialistEntry::name)) {
            return Err(format!("the specialist name {name:?} is listed twice"));
        }
        let (mut specialists, mut experts) = (Vec::new(), Vec::new());
        for entry in self.specialists {
            match entry {
                SpecialistEntry::State(s) => specialists.push(s),
                SpecialistEntry::Answers(e) => experts.push(e),
            }
        }
        Ok(SwarmManifest {
            version,
            config: self.config.into(),
            cta_labels: self.cta_labels,
            cpa_labels: self.cpa_labels,
            primary: self.primary,
            router: self.router,
            fusion: self.fusion,
            cta_head: self.cta_head,
            cpa_head: self.cpa_head,
            column_ngrams: self.column_ngrams,
            column_words: self.column_words,
            specialists,
            experts,
            expert_routing: self.expert_routing,
        })
    }
}

/// The first name that occurs twice in `names`.
pub(super) fn first_repeated<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut seen = std::collections::HashSet::new();
    names.into_iter().find(|name| !seen.insert(*name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_ngrams(ngrams: ColumnNgramsConfig) -> OrchestratorConfig {
        OrchestratorConfig::new(RwkvConfig::minimal(4, 2, 1), 3, LabelKind::MultiLabel, 2)
            .with_column_ngrams(Some(ngrams))
    }

    #[test]
    fn value_statistics_round_trip_and_are_absent_where_off() {
        let on = with_ngrams(ColumnNgramsConfig::new().with_value_stats(true));
        let json = serde_json::to_value(ConfigV2::from(&on)).unwrap();
        assert_eq!(json["column_ngrams"]["value_stats"], true);
        let back: OrchestratorConfig = serde_json::from_value::<ConfigV2>(json).unwrap().into();
        assert!(back.column_ngrams.unwrap().value_stats);

        // Off, the key is not written: models saved before the setting read the same.
        let off = with_ngrams(ColumnNgramsConfig::new());
        let json = serde_json::to_value(ConfigV2::from(&off)).unwrap();
        assert!(json["column_ngrams"].get("value_stats").is_none(), "{json}");
        let back: OrchestratorConfig = serde_json::from_value::<ConfigV2>(json).unwrap().into();
        assert!(!back.column_ngrams.unwrap().value_stats);
    }
}
