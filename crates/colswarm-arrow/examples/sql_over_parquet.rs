//! Annotates every column of a parquet file from SQL: registers the file as a DataFusion table,
//! registers colswarm's `annotate_column` aggregate, and runs
//! `SELECT annotate_column("a") AS "a", annotate_column("b") AS "b", … FROM gittables`.
//!
//! ```sh
//! cargo run -p colswarm-arrow --example sql_over_parquet [-- FILE.parquet [MODEL_DIR [NAMESPACE]]]
//! ```
//!
//! Defaults: the GitTables parquet table in `datasets/`, the shipped `models/colswarm-small`, its
//! `gittables` (DBpedia types of GitTables) namespace. `cargo test --workspace` runs it once.

use std::error::Error;
use std::path::PathBuf;

use colswarm_arrow::AnnotateColumn;
use colswarm_model::Annotator;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{ParquetReadOptions, SessionContext};

fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

async fn run(args: &[String]) -> Result<String, Box<dyn Error>> {
    let parquet = args.first().map(PathBuf::from).unwrap_or_else(|| {
        repo_path("datasets/gittables-semtab22/parquet-fixture/00-01_1.parquet")
    });
    let model = args
        .get(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path("models/colswarm-small"));
    let namespace = args.get(2).map(String::as_str).unwrap_or("gittables");

    let annotator = Annotator::builder(&model).build()?;
    let ctx = SessionContext::new();
    ctx.register_udaf(
        AnnotateColumn::new(annotator)?
            .namespace(namespace)?
            .into_udaf(),
    );
    let path = parquet.to_str().ok_or("the parquet path is not UTF-8")?;
    ctx.register_parquet("gittables", path, ParquetReadOptions::default())
        .await?;

    // One aggregate per column; identifiers are quoted (GitTables headers have any characters).
    let schema = ctx.table("gittables").await?.schema().clone();
    let select: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| {
            let quoted = format!("\"{}\"", f.name().replace('"', "\"\""));
            format!("annotate_column({quoted}) AS {quoted}")
        })
        .collect();
    let sql = format!("SELECT {} FROM gittables", select.join(", "));
    let batches = ctx.sql(&sql).await?.collect().await?;
    let text = pretty_format_batches(&batches)?.to_string();
    Ok(format!(
        "{} ({} columns), namespace `{namespace}`:\n{text}",
        parquet.display(),
        schema.fields().len()
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    println!("{}", run(&args).await?);
    Ok(())
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn the_example_annotates_the_shipped_parquet_table() {
        let text = super::run(&[]).await.unwrap();
        println!("{text}");
        assert!(text.contains("namespace `gittables`"), "{text}");
        assert!(text.contains("label:"), "{text}");
    }
}
