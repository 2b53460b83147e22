//! Pooling of hidden states into per-column rows: the span means every column representation
//! and column reading is made of, and placing a subset of tables' rows into a whole batch's.

use std::ops::Range;

use burn::tensor::{Device, IndexingUpdateOp, Int, Tensor, TensorData};

use crate::batch::TableBatch;

/// Above this many numbers (64 MiB of f32) the averaging matrix of [`span_means`] gives way to
/// summing each span's tokens: the matrix grows with the square of a pass's columns. Every
/// ordinary batch stays below it, so the models trained and scored with the matrix give the
/// same numbers bit for bit.
const AVERAGING_MATRIX_LIMIT: usize = 1 << 24;

/// The mean of `hidden` over each span, one row per (table, span) in table order, so the
/// gradient reaches every token of the span; an empty span gives zeros. A `[spans,
/// batch·time]` averaging matrix times the flattened hidden states where that matrix is small
/// ([`AVERAGING_MATRIX_LIMIT`]); otherwise each span's tokens picked out, scaled by one over the
/// span's length and added into their row (the same means up to float rounding), whose work and
/// memory grow with the tokens the spans cover: a table of thousands of columns would need a
/// matrix of gigabytes.
///
/// # Shapes
///
/// - `hidden`: `[batch, time, d_model]`
/// - returns `[total spans, d_model]`
pub(crate) fn span_means(hidden: Tensor<3>, spans: &[Vec<Range<usize>>]) -> Tensor<2> {
    let [batch, time, _] = hidden.dims();
    let rows: usize = spans.iter().map(Vec::len).sum();
    if rows.saturating_mul(batch).saturating_mul(time) <= AVERAGING_MATRIX_LIMIT {
        averaging_matrix_means(hidden, spans)
    } else {
        summed_span_means(hidden, spans)
    }
}

/// Each span's row (in table order) and its tokens' positions in the flattened `[batch·time]`
/// hidden states, cut at the table's end.
fn flat_spans(
    spans: &[Vec<Range<usize>>],
    time: usize,
) -> impl Iterator<Item = (usize, Range<usize>)> + '_ {
    spans
        .iter()
        .enumerate()
        .flat_map(move |(table, table_spans)| {
            table_spans.iter().map(move |span| {
                table * time + span.start.min(time)..table * time + span.end.min(time)
            })
        })
        .enumerate()
}

/// [`span_means`] by a `[spans, batch·time]` averaging matrix.
fn averaging_matrix_means(hidden: Tensor<3>, spans: &[Vec<Range<usize>>]) -> Tensor<2> {
    let [batch, time, d] = hidden.dims();
    let rows: usize = spans.iter().map(Vec::len).sum();
    let mut weights = vec![0.0f32; rows * batch * time];
    for (row, tokens) in flat_spans(spans, time) {
        if !tokens.is_empty() {
            let weight = 1.0 / tokens.len() as f32;
            let offset = row * batch * time;
            weights[offset + tokens.start..offset + tokens.end].fill(weight);
        }
    }
    let device = hidden.device();
    let weights = Tensor::<2>::from_data(TensorData::new(weights, [rows, batch * time]), &device);
    weights.matmul(hidden.reshape([batch * time, d]))
}

/// [`span_means`] by adding each span's tokens, scaled, into its row.
fn summed_span_means(hidden: Tensor<3>, spans: &[Vec<Range<usize>>]) -> Tensor<2> {
    let [batch, time, d] = hidden.dims();
    let rows: usize = spans.iter().map(Vec::len).sum();
    let (mut tokens, mut targets, mut weights) = (Vec::new(), Vec::new(), Vec::new());
    for (row, span) in flat_spans(spans, time) {
        let weight = 1.0 / span.len().max(1) as f32;
        for t in span {
            tokens.push(t as i64);
            targets.push(row as i64);
            weights.push(weight);
        }
    }
    let device = hidden.device();
    let zeros = Tensor::<2>::zeros([rows, d], &device.clone().without_autodiff());
    if tokens.is_empty() {
        return zeros;
    }
    let n = tokens.len();
    let picked = hidden
        .reshape([batch * time, d])
        .select(0, Tensor::<1, Int>::from_data(tokens.as_slice(), &device));
    let weights = Tensor::<2>::from_data(TensorData::new(weights, [n, 1]), &device);
    zeros.select_assign(
        0,
        Tensor::<1, Int>::from_data(targets.as_slice(), &device),
        picked * weights,
        IndexingUpdateOp::Add,
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::Param;
    use burn::tensor::Tolerance;

    fn hidden(batch: usize, time: usize, d: usize, device: &Device) -> (Vec<f32>, Tensor<3>) {
        let values: Vec<f32> = (0..batch * time * d)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
            .collect();
        let tensor = Tensor::from_data(TensorData::new(values.clone(), [batch, time, d]), device);
        (values, tensor)
    }

    #[test]
    fn span_means_average_each_span_and_give_zeros_for_an_empty_one() {
        let device = Device::flex();
        let (batch, time, d) = (2, 6, 3);
        let (values, tensor) = hidden(batch, time, d, &device);
        // Table 1's last span runs past the table and is cut at its end; 3..3 is empty.
        let spans = vec![vec![0..2, 2..5, 3..3], vec![1..2, 4..9]];
        let mut expected = Vec::new();
        for (table, table_spans) in spans.iter().enumerate() {
            for span in table_spans {
                let span = span.start.min(time)..span.end.min(time);
                for k in 0..d {
                    let sum: f32 = span
                        .clone()
                        .map(|t| values[(table * time + t) * d + k])
                        .sum();
                    expected.push(if span.is_empty() {
                        0.0
                    } else {
                        sum / span.len() as f32
                    });
                }
            }
        }
        let expected = TensorData::new(expected, [5, d]);
        for means in [averaging_matrix_means, summed_span_means] {
            means(tensor.clone(), &spans)
                .into_data()
                .assert_approx_eq::<f32>(&expected, Tolerance::default());
        }
    }

    #[test]
    fn every_token_of_a_span_gets_one_over_its_length_of_the_gradient() {
        let device = Device::flex().autodiff();
        let (batch, time, d) = (2, 4, 2);
        let (_, tensor) = hidden(batch, time, d, &device);
        let spans = vec![vec![0..1, 1..4], vec![2..4]];
        let per_token = [1.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 0.0, 0.0, 0.5, 0.5];
        let expected: Vec<f32> = per_token.iter().flat_map(|&g| [g; 2]).collect();
        let expected = TensorData::new(expected, [batch, time, d]);
        for means in [averaging_matrix_means, summed_span_means] {
            let param = Param::from_tensor(tensor.clone());
            let grads = means(param.val(), &spans).sum().backward();
            let grad = param.grad(&grads).expect("the hidden states take part");
            grad.into_data()
                .assert_approx_eq::<f32>(&expected, Tolerance::default());
        }
    }

    #[test]
    fn a_table_of_thousands_of_columns_is_averaged_without_the_matrix() {
        // 4,000 one-token spans over 5,000 tokens: a matrix of 2·10⁷ numbers, above the limit.
        let device = Device::flex();
        let (values, tensor) = hidden(1, 5000, 1, &device);
        let spans = vec![(0..4000).map(|c| c + 1..c + 2).collect::<Vec<_>>()];
        const { assert!(4000 * 5000 > AVERAGING_MATRIX_LIMIT) };
        let got = span_means(tensor, &spans)
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        assert_eq!(got, values[1..4001]);
    }
}
