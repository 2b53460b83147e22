//! Pooling of hidden states into per-column rows: the span means every column representation
//! and column reading is made of, and placing a subset of tables' rows into a whole batch's.

use std::ops::Range;

use burn::tensor::{Device, IndexingUpdateOp, Int, Tensor, TensorData};

use crate::batch::TableBatch;

/// The mean of `hidden` over each span, one row per (table, span) in table order: a
/// `[spans, batch·time]` averaging matrix times the flattened hidden states, so the gradient
/// reaches every token of the span. An empty span gives zeros.
///
/// # Shapes
///
/// - `hidden`: `[batch, time, d_model]`
/// - returns `[total spans, d_model]`
pub(crate) fn span_means(hidden: Tensor<3>, spans: &[Vec<Range<usize>>]) -> Tensor<2> {
    let [batch, time, d] = hidden.dims();
    let rows: usize = spans.iter().map(Vec::len).sum();
    let mut weights = vec![0.0f32; rows * batch * time];
    let mut row = 0;
    for (table, table_spans) in spans.iter().enumerate() {
        for span in table_spans {
            let span = span.start.min(time)..span.end.min(time);
            if !span.is_empty() {
                let weight = 1.0 / span.len() as f32;
                let offset = row * batch * time + table * time;
                weights[offset + span.start..offset + span.end].fill(weight);
            }
            row += 1;
        }
    }
    let device = hidden.device();
    let weights = Tensor::<2>::from_data(TensorData::new(weights, [rows, batch * time]), &device);
    weights.matmul(hidden.reshape([batch * time, d]))
}

/// Column readings of the tables `rows` (in their order) placed at their columns' rows of the
/// whole batch ([`TableBatch::column_rows`] order), zeros elsewhere.
///
/// # Shapes
///
/// - `readings`: `[columns of rows, d]`; returns `[columns of the batch, d]`
pub(crate) fn spread_rows(
    readings: Tensor<2>,
    batch: &TableBatch,
    rows: &[usize],
    device: &Device,
) -> Tensor<2> {
    let counts: Vec<usize> = batch.spans.iter().map(Vec::len).collect();
    let total: usize = counts.iter().sum();
    if rows.len() == batch.tables.len() {
        return readings;
    }
    let starts: Vec<usize> = counts
        .iter()
        .scan(0, |acc, &c| {
            let start = *acc;
            *acc += c;
            Some(start)
        })
        .collect();
    let index: Vec<i64> = rows
        .iter()
        .flat_map(|&b| (starts[b]..starts[b] + counts[b]).map(|r| r as i64))
        .collect();
    let [_, d] = readings.dims();
    let device = device.clone().without_autodiff();
    let index = Tensor::<1, Int>::from_data(index.as_slice(), &device);
    Tensor::<2>::zeros([total, d], &device).select_assign(
        0,
        index,
        readings,
        IndexingUpdateOp::Assign,
    )
}
