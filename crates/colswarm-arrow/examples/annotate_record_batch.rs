//! Annotates an Arrow record batch with the `Annotator` and prints the annotations as a record
//! batch (one row per predicted label) and the router's decisions.
//!
//! ```sh
//! cargo run -p colswarm-arrow --example annotate_record_batch
//! ```

use std::error::Error;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use colswarm_arrow::{
    AnnotateRecordBatch, BatchOptions, annotations_to_record_batch, router_to_record_batch,
};
use colswarm_model::Annotator;
use datafusion::arrow::util::pretty::pretty_format_batches;

fn main() -> Result<(), Box<dyn Error>> {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/colswarm-small");
    let annotator = Annotator::builder(model).top_k(3).build()?;
    let batch = RecordBatch::try_from_iter([
        (
            "country",
            Arc::new(StringArray::from(vec![
                "France", "Japan", "Brazil", "Kenya",
            ])) as ArrayRef,
        ),
        (
            "capital",
            Arc::new(StringArray::from(vec![
                "Paris",
                "Tokyo",
                "Brasília",
                "Nairobi",
            ])) as ArrayRef,
        ),
        (
            "area_km2",
            Arc::new(Float64Array::from(vec![
                551_695.0,
                377_975.0,
                8_515_767.0,
                580_367.0,
            ])) as ArrayRef,
        ),
    ])?;
    let annotations =
        annotator.annotate_record_batch(&batch, "countries", &BatchOptions::default())?;
    println!(
        "{}",
        pretty_format_batches(&[annotations_to_record_batch(&annotations)?])?
    );
    println!(
        "{}",
        pretty_format_batches(&[router_to_record_batch(&annotations)?])?
    );
    Ok(())
}
