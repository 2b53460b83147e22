//! What the model says about a table: types and relations per column, the router's gates
//! (the output types; [`crate::Model::annotate`] writes them, in `rendering.rs`).

use serde::{Deserialize, Serialize};

use crate::model::SpecialistUse;

/// A label and the model's confidence in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    /// The label.
    pub label: String,
    /// Probability (softmax within its namespace).
    pub confidence: f32,
}

/// The types of a column in one namespace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TypeAnnotation {
    /// The namespace (training set) the labels come from.
    pub namespace: String,
    /// The predicted labels: the argmax (single-label), or every label with at least half the
    /// best one's probability (multi-label); none when the namespace abstains.
    pub labels: Vec<Scored>,
    /// The `k` most probable labels (listed even when the namespace abstains).
    pub top_k: Vec<Scored>,
    /// Whether the namespace abstained: its best label's probability is below the threshold
    /// the model stores for it ([`crate::Namespace::abstain_below`]), or the column holds no
    /// value and its header names none of the labels decoded, so no label is given.
    #[serde(default)]
    pub abstained: bool,
}

/// The relation of a column to the subject column.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelationAnnotation {
    /// The namespace the relations come from.
    pub namespace: String,
    /// The subject column.
    pub subject_column: usize,
    /// The predicted relation; none when the namespace abstains.
    pub relation: Option<Scored>,
    /// The `k` most probable relations (listed even when the namespace abstains).
    pub top_k: Vec<Scored>,
    /// Whether the namespace abstained: its best relation's probability is below the
    /// threshold the model stores for it ([`crate::Namespace::abstain_below`]), or the column
    /// holds no value and its header does not name that relation, so no relation fits.
    #[serde(default)]
    pub abstained: bool,
}

/// Everything the model says about one column.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColumnAnnotation {
    /// Column index in the table.
    pub index: usize,
    /// Its header, when the table has one.
    pub header: Option<String>,
    /// Types, one entry per namespace asked for.
    pub types: Vec<TypeAnnotation>,
    /// Relations to the subject column (none for the subject column itself).
    pub relations: Vec<RelationAnnotation>,
}

/// A specialist's gate for a table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateAnnotation {
    /// Specialist name.
    pub specialist: String,
    /// Gate probability `g`.
    pub gate: f32,
    /// Whether it ran (`g > τ`, within the budget).
    pub active: bool,
}

/// Annotations of one table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableAnnotation {
    /// Table id (file name or benchmark id).
    pub table: String,
    /// The column relations are predicted from.
    pub subject_column: usize,
    /// The router's decision.
    pub router: Vec<GateAnnotation>,
    /// One entry per column.
    pub columns: Vec<ColumnAnnotation>,
}

/// How to annotate.
#[derive(Clone, Debug)]
pub struct AnnotateOptions {
    /// CTA namespaces to report (empty: all).
    pub cta_namespaces: Vec<String>,
    /// CPA namespaces to report (empty: all).
    pub cpa_namespaces: Vec<String>,
    /// How many labels `top_k` lists.
    pub top_k: usize,
    /// Tables per forward pass.
    pub batch_size: usize,
    /// Which specialists read the tables (default: the router's choice).
    pub specialists: SpecialistUse,
    /// Honour the namespaces' abstention thresholds (default); `false` gives every column its
    /// best label.
    pub abstain: bool,
}

impl Default for AnnotateOptions {
    fn default() -> Self {
        AnnotateOptions {
            cta_namespaces: Vec::new(),
            cpa_namespaces: Vec::new(),
            top_k: 3,
            batch_size: 16,
            specialists: SpecialistUse::Router,
            abstain: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_annotation_reads_back_and_old_ones_without_abstention_flags_still_read() {
        let annotation = TableAnnotation {
            table: "films".into(),
            subject_column: 0,
            router: vec![GateAnnotation {
                specialist: "t2d-expert".into(),
                gate: 0.75,
                active: true,
            }],
            columns: vec![ColumnAnnotation {
                index: 1,
                header: Some("director".into()),
                types: vec![TypeAnnotation {
                    namespace: "t2d".into(),
                    labels: vec![Scored {
                        label: "director".into(),
                        confidence: 0.5,
                    }],
                    top_k: Vec::new(),
                    abstained: false,
                }],
                relations: Vec::new(),
            }],
        };
        let json = serde_json::to_string(&annotation).unwrap();
        assert_eq!(
            serde_json::from_str::<TableAnnotation>(&json).unwrap(),
            annotation
        );
        let old = r#"{"namespace":"t2d","labels":[],"top_k":[]}"#;
        let read: TypeAnnotation = serde_json::from_str(old).unwrap();
        assert!(!read.abstained);
    }
}
