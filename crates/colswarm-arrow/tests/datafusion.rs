//! The `annotate_column` aggregate over real data: whole-column semantics, independent of how
//! DataFusion partitions and orders the rows; labels from the asked namespace.

#![cfg(feature = "datafusion")]

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::{Array, RecordBatch};
use colswarm_arrow::{AnnotateColumn, AnnotateRecordBatch, BatchOptions};
use colswarm_model::Annotator;
use colswarm_model::Task;
use datafusion::datasource::MemTable;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};

const MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/colswarm-small");
const PARQUET: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../datasets/gittables-semtab22/parquet-fixture/00-01_1.parquet"
);

/// Without abstention: these tests check that the aggregate sees whole columns, so every
/// non-null column must come back labelled (the shipped `gittables` namespace abstains below
/// 0.48, and a null result then means "no label fits", not "no values").
fn annotator() -> Annotator {
    Annotator::builder(MODEL).abstain(false).build().unwrap()
}

fn session(annotator: &Annotator, partitions: usize) -> SessionContext {
    let ctx =
        SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions));
    ctx.register_udaf(
        AnnotateColumn::new(annotator.clone())
            .unwrap()
            .namespace("gittables")
            .unwrap()
            .into_udaf(),
    );
    ctx
}

/// (label, confidence) of each column of a one-row result.
fn labels(batches: &[RecordBatch]) -> Vec<(String, f32)> {
    assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 1);
    let batch = batches.iter().find(|b| b.num_rows() == 1).unwrap();
    batch
        .columns()
        .iter()
        .map(|column| {
            let result = column.as_struct();
            assert!(!result.is_null(0));
            let label = result.column(0).as_string::<i32>().value(0).to_string();
            let confidence = result.column(1).as_primitive::<Float32Type>().value(0);
            (label, confidence)
        })
        .collect()
}

async fn parquet_batches(ctx: &SessionContext) -> Vec<RecordBatch> {
    ctx.read_parquet(PARQUET, ParquetReadOptions::default())
        .await
        .unwrap()
        .collect()
        .await
        .unwrap()
}

fn select_all(batch: &RecordBatch, table: &str) -> String {
    let select: Vec<String> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| format!("annotate_column(\"{0}\") AS \"{0}\"", f.name()))
        .collect();
    format!("SELECT {} FROM {table}", select.join(", "))
}

#[tokio::test]
async fn partitioning_and_row_order_do_not_change_the_annotations() {
    let annotator = annotator();
    let one = session(&annotator, 1);
    let batches = parquet_batches(&one).await;
    let whole = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
    assert!(
        whole.num_rows() >= 5,
        "the fixture has {} rows",
        whole.num_rows()
    );
    let sql = select_all(&whole, "t");

    one.register_batch("t", whole.clone()).unwrap();
    let expected = labels(&one.sql(&sql).await.unwrap().collect().await.unwrap());
    assert_eq!(expected.len(), whole.num_columns());
    let names: Vec<&str> = annotator.model().space.list(Task::Cta)[1]
        .labels
        .iter()
        .map(String::as_str)
        .collect();
    for (label, confidence) in &expected {
        assert!(
            names.contains(&label.as_str()),
            "{label} is not a gittables label"
        );
        assert!(*confidence > 0.0 && *confidence <= 1.0);
    }

    // The same rows reversed and spread over three partitions, read with four target partitions.
    let reversed: Vec<RecordBatch> = (0..whole.num_rows())
        .rev()
        .map(|row| whole.slice(row, 1))
        .collect();
    let parts: Vec<Vec<RecordBatch>> = (0..3)
        .map(|p| reversed.iter().skip(p).step_by(3).cloned().collect())
        .collect();
    let four = session(&annotator, 4);
    four.register_table(
        "t",
        Arc::new(MemTable::try_new(whole.schema(), parts).unwrap()),
    )
    .unwrap();
    let got = labels(&four.sql(&sql).await.unwrap().collect().await.unwrap());
    assert_eq!(got, expected);
}

#[tokio::test]
async fn group_by_annotates_each_group_and_all_nulls_give_null() {
    let ctx = session(&annotator(), 2);
    ctx.sql(
        "CREATE TABLE people(team VARCHAR, name VARCHAR, born INT) AS VALUES \
         ('a', 'Ada Lovelace', 1815), ('a', 'Alan Turing', 1912), \
         ('b', NULL, 1906), ('b', NULL, 1903)",
    )
    .await
    .unwrap();
    let batches = ctx
        .sql("SELECT team, annotate_column(name) AS name, annotate_column(born) AS born FROM people GROUP BY team ORDER BY team")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let batch = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
    assert_eq!(batch.num_rows(), 2);
    let name = batch.column(1).as_struct();
    assert!(!name.is_null(0), "team a has names");
    assert!(name.is_null(1), "team b has only nulls");
    let born = batch.column(2).as_struct();
    assert!(!born.is_null(0) && !born.is_null(1));
}

#[tokio::test]
async fn an_unknown_namespace_is_refused_by_name() {
    let err = AnnotateColumn::new(annotator())
        .unwrap()
        .namespace("nope")
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("`nope`") && text.contains("gittables"),
        "{text}"
    );
}

#[test]
fn record_batch_annotation_equals_table_annotation_and_threads_agree() {
    let ctx = SessionContext::new();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let batches = runtime.block_on(parquet_batches(&ctx));
    let whole = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
    // Windows of 4 columns: the 11-column fixture becomes 3 tables.
    let options = BatchOptions {
        max_rows: 1_000,
        max_columns: 4,
    };
    let one = annotator();
    let two = Annotator::builder(MODEL).threads(2).build().unwrap();
    let a = one
        .annotate_record_batch(&whole, "fixture", &options)
        .unwrap();
    let b = two
        .annotate_record_batch(&whole, "fixture", &options)
        .unwrap();
    assert_eq!(a.len(), whole.num_columns().div_ceil(4));
    let indices: Vec<usize> = a
        .iter()
        .flat_map(|t| t.columns.iter().map(|c| c.index))
        .collect();
    assert_eq!(indices, (0..whole.num_columns()).collect::<Vec<_>>());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.table, y.table);
        assert_eq!(x.subject_column, y.subject_column);
        for (p, q) in x.columns.iter().zip(&y.columns) {
            assert_eq!(p.types[0].top_k[0].label, q.types[0].top_k[0].label);
        }
    }
    // The first window equals annotating the same four columns as a table directly.
    let first = colswarm_arrow::table_from_record_batch(
        &whole.project(&[0, 1, 2, 3]).unwrap(),
        "fixture#c0-3",
        1_000,
    )
    .unwrap();
    let direct = one.annotate(&first).unwrap();
    assert_eq!(direct.columns.len(), 4);
    for (p, q) in direct.columns.iter().zip(&a[0].columns) {
        assert_eq!(p.types[1].top_k[0].label, q.types[1].top_k[0].label);
        assert!((p.types[1].top_k[0].confidence - q.types[1].top_k[0].confidence).abs() < 1e-5);
    }
}
