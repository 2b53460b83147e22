//! Annotates a table file with the shipped model and prints each column's best type and its
//! relation to the subject column.
//!
//! ```text
//! cargo run --example annotate_table -- datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv
//! ```

use colswarm::{Annotator, read_table};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: annotate_table <table file> [model dir]")?;
    let model = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "models/colswarm-small".into());
    let annotator = Annotator::builder(&model).top_k(3).build()?;
    let table = read_table(&path)?;
    let annotation = annotator.annotate(&table)?;
    println!(
        "{}: {} columns, subject column {}",
        annotation.table,
        annotation.columns.len(),
        annotation.subject_column
    );
    for column in &annotation.columns {
        let header = column.header.as_deref().unwrap_or("");
        for types in &column.types {
            let best = types
                .labels
                .first()
                .map_or(("-", 0.0), |l| (l.label.as_str(), l.confidence));
            println!(
                "  {:>2} {header:<24} {:<10} {} ({:.2})",
                column.index, types.namespace, best.0, best.1
            );
        }
        for relation in &column.relations {
            // An abstaining namespace names no relation: none of its relations fits.
            let best = relation
                .relation
                .as_ref()
                .map_or(("none", 0.0), |r| (r.label.as_str(), r.confidence));
            println!(
                "     {:<24} {:<10} relation {} ({:.2})",
                "", relation.namespace, best.0, best.1
            );
        }
    }
    Ok(())
}
