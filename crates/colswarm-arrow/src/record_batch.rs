//! Arrow [`RecordBatch`]es as colswarm [`Table`]s, and annotating them.

use arrow_array::{Array, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use colswarm_model::Annotator;
use colswarm_model::TableAnnotation;
use colswarm_tables::{Cell, Column, Table};

use crate::error::ArrowError;

/// How a record batch becomes tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchOptions {
    /// Most rows read per column (default 1,000, as `colswarm annotate` reads files). Longer
    /// batches are sampled at evenly spaced rows, so the sample is deterministic and spans the
    /// whole batch; the model's serializer then samples its own few rows from these.
    pub max_rows: usize,
    /// Most columns per table (default 32). Wider batches are split into consecutive windows of
    /// columns, each annotated as its own table (the model was trained on tables of at most a
    /// few dozen columns); each window has its own subject column.
    pub max_columns: usize,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            max_rows: 1_000,
            max_columns: 32,
        }
    }
}

/// The rows read from a batch of `n_rows` rows: all of them, or `max_rows` evenly spaced ones.
fn sampled_rows(n_rows: usize, max_rows: usize) -> Vec<usize> {
    if n_rows <= max_rows {
        return (0..n_rows).collect();
    }
    // Row i·n/k for i < k: strictly increasing because n > k.
    (0..max_rows).map(|i| i * n_rows / max_rows).collect()
}

/// Converts a whole record batch into one [`Table`] (no column windows): each field becomes a
/// column named after it, each value its display text (Arrow's formatter; nulls become null
/// cells), at most `max_rows` rows.
pub fn table_from_record_batch(
    batch: &RecordBatch,
    id: &str,
    max_rows: usize,
) -> Result<Table, ArrowError> {
    if batch.num_columns() == 0 || batch.num_rows() == 0 {
        return Err(ArrowError::Empty {
            table: id.to_string(),
            columns: batch.num_columns(),
            rows: batch.num_rows(),
        });
    }
    let rows = sampled_rows(batch.num_rows(), max_rows.max(1));
    let format = FormatOptions::default();
    let schema = batch.schema();
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .enumerate()
        .map(|(index, (array, field))| {
            let wrap = |source| ArrowError::Format {
                table: id.to_string(),
                column: index,
                name: field.name().clone(),
                source,
            };
            let formatter = ArrayFormatter::try_new(array.as_ref(), &format).map_err(wrap)?;
            let mut cells = Vec::with_capacity(rows.len());
            for &row in &rows {
                if array.is_null(row) {
                    cells.push(Cell::null());
                } else {
                    cells.push(Cell::new(
                        formatter.value(row).try_to_string().map_err(wrap)?,
                    ));
                }
            }
            Ok(Column::new(Some(field.name().clone()), cells))
        })
        .collect::<Result<Vec<_>, ArrowError>>()?;
    let mut table = Table::new(id, columns);
    table.context.has_header_row = true;
    Ok(table)
}

/// Splits a record batch into tables of at most `options.max_columns` consecutive columns.
/// Returns each table with the batch index of its first column. A batch no wider than
/// `max_columns` gives one table with the id `id`; windows are named `id#c<first>-<last>`.
pub fn tables_from_record_batch(
    batch: &RecordBatch,
    id: &str,
    options: &BatchOptions,
) -> Result<Vec<(usize, Table)>, ArrowError> {
    let width = options.max_columns.max(1);
    let whole = table_from_record_batch(batch, id, options.max_rows)?;
    if whole.n_columns() <= width {
        return Ok(vec![(0, whole)]);
    }
    let mut columns = whole.columns.into_iter();
    let mut tables = Vec::new();
    let mut first = 0;
    loop {
        let window: Vec<Column> = columns.by_ref().take(width).collect();
        if window.is_empty() {
            break;
        }
        let last = first + window.len() - 1;
        let mut table = Table::new(format!("{id}#c{first}-{last}"), window);
        table.context.has_header_row = true;
        tables.push((first, table));
        first = last + 1;
    }
    Ok(tables)
}

/// Annotating Arrow data with an [`Annotator`].
pub trait AnnotateRecordBatch {
    /// Annotates every column of `batch`, a table called `id`. Batches wider than
    /// `options.max_columns` are annotated in column windows (see [`tables_from_record_batch`]),
    /// which the annotator's threads share; one [`TableAnnotation`] per window, in column order,
    /// with column indices (and subject columns) counted in the whole batch.
    fn annotate_record_batch(
        &self,
        batch: &RecordBatch,
        id: &str,
        options: &BatchOptions,
    ) -> Result<Vec<TableAnnotation>, ArrowError>;
}

impl AnnotateRecordBatch for Annotator {
    fn annotate_record_batch(
        &self,
        batch: &RecordBatch,
        id: &str,
        options: &BatchOptions,
    ) -> Result<Vec<TableAnnotation>, ArrowError> {
        let (offsets, tables): (Vec<usize>, Vec<Table>) =
            tables_from_record_batch(batch, id, options)?
                .into_iter()
                .unzip();
        let mut annotations = self.annotate_all(&tables)?;
        for (annotation, offset) in annotations.iter_mut().zip(offsets) {
            annotation.subject_column += offset;
            for column in &mut annotation.columns {
                column.index += offset;
                for relation in &mut column.relations {
                    relation.subject_column += offset;
                }
            }
        }
        Ok(annotations)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Float64Array, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    fn batch(n_columns: usize, n_rows: usize) -> RecordBatch {
        let fields: Vec<Field> = (0..n_columns)
            .map(|c| Field::new(format!("col{c}"), DataType::Int64, true))
            .collect();
        let arrays: Vec<ArrayRef> = (0..n_columns)
            .map(|c| {
                Arc::new(Int64Array::from_iter((0..n_rows).map(|r| {
                    // One null per column, at a row that moves with the column.
                    (r != c % n_rows.max(1)).then_some((c * 1000 + r) as i64)
                }))) as ArrayRef
            })
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
    }

    #[test]
    fn values_become_display_text_and_nulls_null_cells() {
        let schema = Schema::new(vec![
            Field::new("name", DataType::Utf8, true),
            Field::new("score", DataType::Float64, false),
        ]);
        let batch = RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(StringArray::from(vec![Some("Ada"), None])),
                Arc::new(Float64Array::from(vec![1.5, -2.0])),
            ],
        )
        .unwrap();
        let table = table_from_record_batch(&batch, "people", 10).unwrap();
        assert_eq!(table.id, "people");
        assert_eq!(table.columns[0].header.as_deref(), Some("name"));
        assert_eq!(table.columns[0].cells[0].text(), "Ada");
        assert!(table.columns[0].cells[1].is_null());
        assert_eq!(table.columns[1].cells[0].text(), "1.5");
        assert_eq!(table.columns[1].cells[1].text(), "-2.0");
    }

    #[test]
    fn long_batches_are_sampled_at_evenly_spaced_rows() {
        assert_eq!(sampled_rows(3, 10), vec![0, 1, 2]);
        assert_eq!(sampled_rows(10, 4), vec![0, 2, 5, 7]);
        let table = table_from_record_batch(&batch(2, 5_000), "long", 100).unwrap();
        assert_eq!(table.n_rows(), 100);
        // Row 4950 (= 99·5000/100) of column 1 holds 1000 + 4950.
        assert_eq!(table.columns[1].cells[99].text(), "5950");
    }

    #[test]
    fn wide_batches_split_into_windows_that_cover_every_column_once() {
        let options = BatchOptions {
            max_rows: 10,
            max_columns: 32,
        };
        let tables = tables_from_record_batch(&batch(70, 3), "wide", &options).unwrap();
        let firsts: Vec<usize> = tables.iter().map(|(first, _)| *first).collect();
        assert_eq!(firsts, vec![0, 32, 64]);
        let widths: Vec<usize> = tables.iter().map(|(_, t)| t.n_columns()).collect();
        assert_eq!(widths, vec![32, 32, 6]);
        assert_eq!(tables[2].1.id, "wide#c64-69");
        assert_eq!(tables[2].1.columns[5].header.as_deref(), Some("col69"));
        let narrow = tables_from_record_batch(&batch(3, 3), "narrow", &options).unwrap();
        assert_eq!(narrow.len(), 1);
        assert_eq!(narrow[0].1.id, "narrow");
    }

    #[test]
    fn empty_batches_are_refused_by_name() {
        let empty = batch(2, 0);
        let err = table_from_record_batch(&empty, "nothing", 10).unwrap_err();
        assert!(err.to_string().contains("`nothing`"), "{err}");
        assert!(matches!(err, ArrowError::Empty { rows: 0, .. }));
    }
}
