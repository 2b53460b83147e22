//! Every reader on the real files in the repository's `datasets/` folder; the counts are the
//! ones in each PROVENANCE.md (GitTables: per fold, counted from the four folds shipped here,
//! since PROVENANCE's totals include the reserved fold cv_4).

use std::collections::BTreeSet;
use std::path::PathBuf;

use colswarm_tables::{
    LabelSet, QUERY_END, ReadOptions, SatoCvOptions, SerializeConfig, Table, TurlTask,
    load_sotab_split, load_t2d, read_sato_cv_folds, read_sotab_cpa_gt, read_sotab_cta_gt,
    read_sotab_table, read_turl_json, read_wikitables_csv, serialize_table, sotab_label_set,
    wikitables_label_set,
};

fn datasets() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets"))
}

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
}

fn n_columns(tables: &[Table]) -> usize {
    tables.iter().map(Table::n_columns).sum()
}

fn n_labelled(tables: &[Table]) -> usize {
    tables.iter().map(Table::n_labelled_columns).sum()
}

fn distinct_labels<'t>(tables: impl IntoIterator<Item = &'t Table>) -> BTreeSet<String> {
    tables
        .into_iter()
        .flat_map(|t| t.columns.iter().flat_map(|c| c.labels.iter().cloned()))
        .collect()
}

/// Serializes every table and checks the invariants the model relies on.
fn check_serialization(tables: &[Table]) {
    let config = SerializeConfig {
        max_table_tokens: 1024,
        ..SerializeConfig::default()
    };
    for table in tables {
        let s = serialize_table(table, &config);
        assert_eq!(s.column_queries.len(), table.n_columns(), "{}", table.id);
        assert_eq!(s.column_spans.len(), table.n_columns(), "{}", table.id);
        assert!(
            s.over_budget || s.table_tokens.len() <= 1024,
            "{}",
            table.id
        );
        assert!(
            s.column_queries
                .iter()
                .all(|q| q.last() == Some(&QUERY_END))
        );
        assert_eq!(s, serialize_table(table, &config), "deterministic");
    }
}

#[test]
fn wikitables_turl_subset() {
    let dir = datasets().join("wikitables-turl-subset");
    let options = ReadOptions::default();
    let labels = wikitables_label_set(&dir).unwrap();
    assert_eq!(labels.len(), 66);
    assert!((0..66).all(|id| labels.text(id).is_some()));
    assert_eq!(labels.hierarchy().map(|h| h.len()), Some(66));
    let actor = labels.id("film.actor").unwrap();
    let person = labels.id("people.person").unwrap();
    assert!(labels.ancestor_ids(actor).contains(&person));

    // PROVENANCE: train 809 tables / 942 columns, dev 416 / 1,019; 66 types in each split;
    // 241 / 535 columns with more than one type.
    for (file, tables_expected, columns_expected, multi_expected) in [
        ("train_wikitables_subset_20.csv.gz", 809, 942, 241),
        ("dev_wikitables_subset_2.csv.gz", 416, 1019, 535),
    ] {
        let tables = read_wikitables_csv(dir.join(file), &options).unwrap();
        assert_eq!(tables.len(), tables_expected, "{file}");
        assert_eq!(n_columns(&tables), columns_expected, "{file}");
        assert_eq!(
            n_labelled(&tables),
            columns_expected,
            "{file}: every column is labelled"
        );
        let multi = tables
            .iter()
            .flat_map(|t| &t.columns)
            .filter(|c| c.labels.len() > 1)
            .count();
        assert_eq!(multi, multi_expected, "{file}");
        let seen = distinct_labels(&tables);
        assert_eq!(seen.len(), 66, "{file}");
        assert!(seen.iter().all(|l| labels.id(l).is_some()));
        assert!(
            tables
                .iter()
                .all(|t| t.context.page_title.is_some() && t.context.has_header_row)
        );
        check_serialization(&tables);
    }
}

#[test]
fn gittables_semtab22_folds() {
    let root = datasets().join("gittables-semtab22");
    // (folder, file prefix, per fold (tables, columns, labelled), classes over cv_0..cv_3)
    let sets = [
        (
            "gt-semtab22-dbpedia-all",
            "db_semi1_cv_",
            [
                (750, 9175, 1085),
                (755, 9395, 1110),
                (746, 8783, 1091),
                (745, 8896, 1078),
            ],
            101,
        ),
        (
            "gt-semtab22-schema-property-all",
            "sp_semi1_cv_",
            [
                (574, 6721, 782),
                (577, 6685, 778),
                (570, 7214, 770),
                (574, 6476, 777),
            ],
            53,
        ),
    ];
    for (folder, prefix, expected, n_classes) in sets {
        let paths: Vec<PathBuf> = (0..4)
            .map(|k| root.join(folder).join(format!("{prefix}{k}.csv.gz")))
            .collect();
        let dataset = read_sato_cv_folds(&paths, &SatoCvOptions::gittables()).unwrap();
        for (fold, (tables, (n_tables, n_cols, n_lab))) in
            dataset.folds.iter().zip(expected).enumerate()
        {
            assert_eq!(tables.len(), n_tables, "{folder} cv_{fold}");
            assert_eq!(n_columns(tables), n_cols, "{folder} cv_{fold}");
            assert_eq!(n_labelled(tables), n_lab, "{folder} cv_{fold}");
            assert!(tables.iter().all(|t| !t.context.has_header_row));
        }
        assert_eq!(dataset.labels.len(), n_classes, "{folder}");
        // Every id is used, so label ids equal the files' class ids.
        for (class_id, class) in &dataset.class_ids {
            assert_eq!(dataset.labels.id(class), usize::try_from(*class_id).ok());
        }
        let all_tables: Vec<Table> = dataset.tables().cloned().collect();
        // Folds are disjoint table sets.
        let ids: BTreeSet<&str> = all_tables.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids.len(), all_tables.len());
        check_serialization(&all_tables[..200]);
    }
}

#[test]
fn sotab_v2_fixtures() {
    let root = datasets().join("sotab-v2-fixtures");
    let options = ReadOptions::default();

    // PROVENANCE: CTA test 1,851 labelled columns / 609 tables / 82 labels; validation
    // 1,769 / 456 / 82; CPA training (small) 27,603 pairs / 7,430 tables / 108 labels.
    for (file, n_records, n_tables, n_labels) in [
        ("CTA/sotab_v2_cta_test_set.csv.gz", 1851, 609, 82),
        ("CTA/sotab_v2_cta_validation_set.csv.gz", 1769, 456, 82),
    ] {
        let records = read_sotab_cta_gt(root.join(file), &options).unwrap();
        assert_eq!(records.len(), n_records, "{file}");
        let tables: BTreeSet<&str> = records.iter().map(|r| r.table_name.as_str()).collect();
        let labels: BTreeSet<&str> = records.iter().map(|r| r.label.as_str()).collect();
        assert_eq!((tables.len(), labels.len()), (n_tables, n_labels), "{file}");
        assert!(
            records
                .iter()
                .all(|r| r.domain.is_some() && r.column_type.is_some())
        );
    }
    let cpa = read_sotab_cpa_gt(
        root.join("CPA/sotab_v2_cpa_training_set_small.csv.gz"),
        &options,
    )
    .unwrap();
    assert_eq!(cpa.len(), 27_603);
    let cpa_tables: BTreeSet<&str> = cpa.iter().map(|r| r.table_name.as_str()).collect();
    let cpa_labels: BTreeSet<&str> = cpa.iter().map(|r| r.label.as_str()).collect();
    assert_eq!((cpa_tables.len(), cpa_labels.len()), (7430, 108));

    // Label sets: V2 text maps (82 / 108), V1 vocabularies (91 / 176).
    let cta_labels = sotab_label_set(root.join("CTA/labels_to_text_sotabv2-cta.txt")).unwrap();
    let cpa_label_set = sotab_label_set(root.join("CPA/labels_to_text_sotabv2-cpa.txt")).unwrap();
    assert_eq!((cta_labels.len(), cpa_label_set.len()), (82, 108));
    assert!(cpa_labels.iter().all(|l| cpa_label_set.id(l).is_some()));
    let v1_types = LabelSet::from_id_tsv_file(root.join("v1-vocab/type_vocab.txt")).unwrap();
    let v1_relations =
        LabelSet::from_id_tsv_file(root.join("v1-vocab/relation_vocab.txt")).unwrap();
    assert_eq!((v1_types.len(), v1_relations.len()), (91, 176));
    assert_eq!(v1_types.label(0), Some("price"));
    let subset =
        LabelSet::from_lines_file(root.join("CTA/sotabv2-subsetu_all_labels.txt")).unwrap();
    assert_eq!(subset.len(), 50);

    // The three real table bodies.
    let book = read_sotab_table(
        root.join("CTA/Test/Book_5sentidoseditora.pt_September2020_CTA.json.gz"),
        &options,
    )
    .unwrap();
    assert_eq!((book.n_rows(), book.n_columns()), (19, 4));
    assert_eq!(
        book.id,
        "Book_5sentidoseditora.pt_September2020_CTA.json.gz"
    );
    assert!(book.columns[2].cells.iter().all(|c| c.is_numeric()));

    let cta_split = load_sotab_split(
        root.join("CTA/Test"),
        Some(&root.join("CTA/sotab_v2_cta_test_set.csv.gz")),
        None,
        &options,
    )
    .unwrap();
    assert_eq!(cta_split.tables.len(), 2);
    assert_eq!(
        cta_split.tables[0].n_rows() + cta_split.tables[1].n_rows(),
        19 + 30
    );
    // These two ArcheType samples are not among the 609 test tables.
    assert_eq!(cta_split.missing_tables.len(), 609);
    assert_eq!(n_labelled(&cta_split.tables), 0);

    let cpa_split = load_sotab_split(
        root.join("CPA/Train"),
        None,
        Some(&root.join("CPA/sotab_v2_cpa_training_set_small.csv.gz")),
        &options,
    )
    .unwrap();
    let event = &cpa_split.tables[0];
    assert_eq!((event.n_rows(), event.n_columns()), (17, 10));
    assert_eq!(event.cpa_targets.len(), 7);
    assert_eq!(event.subject_column, Some(0));
    assert_eq!(cpa_split.missing_tables.len(), 7429);
    check_serialization(&cpa_split.tables);
    check_serialization(&cta_split.tables);
}

#[test]
fn t2d_webtables() {
    let dataset = load_t2d(
        datasets().join("t2d-webtables/t2d.tar.gz"),
        &ReadOptions::default(),
    )
    .unwrap();
    // PROVENANCE: 682 tables; 1,883 column annotations; 656 key columns; 1,227 non-label
    // property annotations; 271 distinct property URIs.
    assert_eq!(dataset.tables.len(), 682);
    let placed: usize = dataset
        .tables
        .iter()
        .flat_map(|t| &t.columns)
        .map(|c| c.labels.len())
        .sum();
    assert_eq!(placed + dataset.skipped.len(), 1883);
    assert_eq!(
        dataset.skipped.len(),
        1,
        "one annotation points past its table"
    );
    let label_columns = dataset
        .tables
        .iter()
        .flat_map(|t| &t.columns)
        .filter(|c| c.labels.iter().any(|l| l == colswarm_tables::RDFS_LABEL))
        .count();
    assert_eq!(label_columns, 656);
    assert_eq!(placed - label_columns + dataset.skipped.len(), 1227);
    assert_eq!(dataset.properties.len(), 271);
    assert_eq!(
        dataset
            .tables
            .iter()
            .filter(|t| t.context.transposed)
            .count(),
        47,
        "vertical tables"
    );
    assert_eq!(
        dataset
            .tables
            .iter()
            .filter(|t| t.subject_column.is_some())
            .count(),
        632
    );
    let cpa: usize = dataset.tables.iter().map(|t| t.cpa_targets.len()).sum();
    assert_eq!(cpa, 1039);
    // Classes: 674 of the 682 tables have a row in classes_complete.csv, 86 distinct URIs.
    assert_eq!(
        dataset
            .tables
            .iter()
            .filter(|t| t.table_class.is_some())
            .count(),
        674
    );
    assert_eq!(dataset.classes.len(), 86);
    assert_eq!(dataset.report.padded_rows, 2037);
    check_serialization(&dataset.tables);
}

#[cfg(feature = "parquet")]
#[test]
fn gittables_parquet_fixture() {
    use colswarm_tables::{GitTablesAnnotation, read_gittables_parquet};
    let path = datasets().join("gittables-semtab22/parquet-fixture/00-01_1.parquet");
    let (table, metadata) = read_gittables_parquet(
        &path,
        Some(GitTablesAnnotation::DbpediaSyntactic),
        &ReadOptions::default(),
    )
    .unwrap();
    // PROVENANCE: 10 rows x 11 columns; license MIT.
    assert_eq!((table.n_rows(), table.n_columns()), (10, 11));
    let headers: Vec<&str> = table
        .columns
        .iter()
        .filter_map(|c| c.header.as_deref())
        .collect();
    assert_eq!(
        headers,
        [
            "ID", "Type", "Story", "Parent", "Points", "Comments", "Author", "Title", "URL",
            "Content", "Created"
        ]
    );
    assert_eq!(metadata.license.as_deref(), Some("MIT License"));
    assert_eq!(
        (metadata.number_rows, metadata.number_columns),
        (Some(10), Some(11))
    );
    let labelled: Vec<(&str, &str)> = table
        .columns
        .iter()
        .filter(|c| c.is_labelled())
        .map(|c| (c.header.as_deref().unwrap_or(""), c.labels[0].as_str()))
        .collect();
    assert_eq!(
        labelled,
        [
            ("ID", "id"),
            ("Type", "type"),
            ("Parent", "parent"),
            ("Author", "author"),
            ("Title", "title"),
            ("Created", "created")
        ]
    );
    assert!(
        table.columns[0]
            .cells
            .iter()
            .all(|c| c.kind() == colswarm_tables::CellKind::Integer)
    );
    check_serialization(std::slice::from_ref(&table));
}

#[test]
fn semtab_fixture() {
    use colswarm_tables::{SemTabLayout, load_semtab};
    let root = fixtures().join("semtab");
    let layout = SemTabLayout {
        tables_dir: root.join("tables"),
        cta_targets: Some(root.join("targets/CTA_Targets.csv")),
        cta_gt: Some(root.join("gt/CTA_gt.csv")),
        cpa_targets: Some(root.join("targets/CPA_Targets.csv")),
        cpa_gt: Some(root.join("gt/CPA_gt.csv")),
    };
    let dataset = load_semtab(&layout, &ReadOptions::default()).unwrap();
    assert_eq!(dataset.tables.len(), 2);
    assert_eq!(dataset.cta_targets.len(), 3);
    assert_eq!(
        dataset.cpa_targets,
        [("T1".into(), 0, 1), ("T1".into(), 0, 2)]
    );
    let t1 = &dataset.tables[0];
    assert_eq!(
        t1.columns[0].labels,
        [
            "http://dbpedia.org/ontology/City",
            "http://dbpedia.org/ontology/Place"
        ]
    );
    assert_eq!(t1.cell(2, 0).map(|c| c.text()), Some("Washington, D.C."));
    assert_eq!(dataset.tables[1].columns[0].labels.len(), 2);
    assert_eq!(t1.cpa_targets.len(), 2);
    assert_eq!(dataset.cta_labels.len(), 5);
    assert_eq!(dataset.cpa_labels.len(), 2);
}

#[test]
fn turl_json_fixture() {
    let root = fixtures().join("turl");
    let options = ReadOptions::default();
    let tables = read_turl_json(
        root.join("test.table_col_type.json"),
        TurlTask::ColumnTypes,
        &options,
    )
    .unwrap();
    assert_eq!(tables.len(), 2);
    let first = &tables[0];
    assert_eq!((first.n_columns(), first.n_rows()), (2, 3));
    assert!(first.cell(1, 0).is_some_and(|c| c.is_null()));
    assert_eq!(first.columns[1].labels.len(), 2);
    assert_eq!(
        tables[1].context.caption.as_deref(),
        Some("Singles released")
    );
    let vocab = LabelSet::from_id_tsv_file(root.join("type_vocab.txt")).unwrap();
    assert!(
        tables
            .iter()
            .flat_map(|t| &t.columns)
            .all(|c| vocab.ids_of(&c.labels).is_some())
    );

    let relations = read_turl_json(
        root.join("test.table_rel_extraction.json"),
        TurlTask::Relations,
        &options,
    )
    .unwrap();
    let rivers = &relations[0];
    assert_eq!(rivers.subject_column, Some(0));
    assert_eq!(rivers.cpa_targets.len(), 2);
    assert_eq!(rivers.cpa_targets[0].labels.len(), 2);
    assert_eq!(rivers.cpa_targets[1].object_column, 2);
}
