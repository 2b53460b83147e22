//! Compressed inputs read like plain ones: the same tables, and errors that name the file (and,
//! in an archive, the file inside it) and the line.

use std::io::Write;
use std::path::{Path, PathBuf};

use colswarm_tables::{
    CsvOptions, DatasetFormat, ReadOptions, Split, TableError, load_t2d, load_tables, read_csv,
};
use flate2::Compression;
use flate2::write::GzEncoder;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "colswarm-compressed-inputs-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn write_tar_gz(path: &Path, entries: &[(String, &[u8])]) {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, bytes) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, *bytes).unwrap();
    }
    std::fs::write(path, gzip(&builder.into_inner().unwrap())).unwrap();
}

/// A two-table T2D layout: (inner path, contents).
fn t2d_files(bad_attribute_row: bool) -> Vec<(String, Vec<u8>)> {
    let second_row: &[u8] = if bad_attribute_row {
        b"\"http://dbpedia.org/ontology/country\",\"country\"\n"
    } else {
        b"\"http://dbpedia.org/ontology/country\",\"country\",\"False\",\"1\"\n"
    };
    let mut attributes =
        b"\"http://www.w3.org/2000/01/rdf-schema#label\",\"city\",\"True\",\"0\"\n".to_vec();
    attributes.extend_from_slice(second_row);
    vec![
        (
            "classes_complete.csv".into(),
            b"\"a.tar.gz\",\"City\",\"http://dbpedia.org/ontology/City\",\"0\"\n".to_vec(),
        ),
        ("attributes/a.csv".into(), attributes),
        (
            "tables/a.csv".into(),
            b"\"city\",\"country\"\n\"Oslo\",\"Norway\"\n\"Lyon\",\"France\"\n".to_vec(),
        ),
        (
            "attributes/b.csv".into(),
            b"\"http://www.w3.org/2000/01/rdf-schema#label\",\"name\",\"True\",\"0\"\n".to_vec(),
        ),
        ("tables/b.csv".into(), b"\"name\"\n\"Ada\"\n".to_vec()),
    ]
}

fn write_dir(root: &Path, files: &[(String, Vec<u8>)]) {
    for (inner, bytes) in files {
        let path = root.join(inner);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

fn entries(files: &[(String, Vec<u8>)], prefix: &str) -> Vec<(String, Vec<u8>)> {
    files
        .iter()
        .map(|(inner, bytes)| (format!("{prefix}{inner}"), bytes.clone()))
        .collect()
}

fn tar_gz(path: &Path, files: &[(String, Vec<u8>)]) {
    let borrowed: Vec<(String, &[u8])> = files
        .iter()
        .map(|(name, bytes)| (name.clone(), bytes.as_slice()))
        .collect();
    write_tar_gz(path, &borrowed);
}

#[test]
fn t2d_from_an_archive_equals_t2d_from_its_folder() {
    let dir = scratch("t2d-same");
    let files = t2d_files(false);
    write_dir(&dir.join("plain"), &files);
    tar_gz(&dir.join("flat.tar.gz"), &entries(&files, ""));
    // `tar czf t2d.tgz t2d`: everything under one top-level folder.
    tar_gz(&dir.join("nested.tgz"), &entries(&files, "t2d/"));
    let options = ReadOptions::default();
    let plain = load_t2d(dir.join("plain"), &options).unwrap();
    assert_eq!(plain.tables.len(), 2);
    assert_eq!(plain.tables[0].cpa_targets.len(), 1);
    for archive in ["flat.tar.gz", "nested.tgz"] {
        let packed = load_t2d(dir.join(archive), &options).unwrap();
        assert_eq!(
            format!("{:?}", packed.tables),
            format!("{:?}", plain.tables)
        );
        assert_eq!(packed.properties, plain.properties);
        assert_eq!(packed.classes, plain.classes);
    }
}

#[test]
fn a_bad_row_in_an_archive_names_the_file_inside_it_and_the_line() {
    let dir = scratch("t2d-bad");
    let archive = dir.join("t2d.tar.gz");
    tar_gz(&archive, &entries(&t2d_files(true), ""));
    let err = load_t2d(&archive, &ReadOptions::default()).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("t2d.tar.gz/attributes/a.csv") && message.contains("line 2"),
        "{message}"
    );
    // An archive without the layout's folders says which is missing.
    let empty = dir.join("empty.tar.gz");
    tar_gz(
        &empty,
        &[("classes_complete.csv".to_string(), b"".to_vec())],
    );
    let message = load_t2d(&empty, &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(message.contains("attributes/"), "{message}");
}

#[test]
fn gzipped_cv_folds_read_like_plain_ones_and_errors_name_the_line() {
    let dir = scratch("cv");
    let good = "table_id,col_idx,class,class_id,data\nt1,0,city,0,Oslo;Lyon\nt1,1,,-1,1;2\n";
    std::fs::write(dir.join("cv_0.csv"), good).unwrap();
    std::fs::write(dir.join("cv_0.csv.gz"), gzip(good.as_bytes())).unwrap();
    let plain = load_tables(DatasetFormat::SatoCv, &[dir.join("cv_0.csv")], Split::All).unwrap();
    let packed = load_tables(
        DatasetFormat::SatoCv,
        &[dir.join("cv_0.csv.gz")],
        Split::All,
    )
    .unwrap();
    assert_eq!(
        format!("{:?}", packed.tables),
        format!("{:?}", plain.tables)
    );

    let bad = "table_id,col_idx,class,class_id,data\nt1,0,city,0,Oslo\nt1,x,city,0,Lyon\n";
    let path = dir.join("bad_cv.csv.gz");
    std::fs::write(&path, gzip(bad.as_bytes())).unwrap();
    let message = load_tables(DatasetFormat::SatoCv, &[path], Split::All)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("bad_cv.csv.gz") && message.contains("line 3"),
        "{message}"
    );
}

#[test]
fn a_truncated_gzip_file_is_a_gzip_error_naming_it() {
    let dir = scratch("truncated");
    let rows: String = (0..2000).map(|i| format!("{i},name {i}\n")).collect();
    let mut bytes = gzip(format!("id,name\n{rows}").as_bytes());
    bytes.truncate(bytes.len() / 2);
    let path = dir.join("cut.csv.gz");
    std::fs::write(&path, bytes).unwrap();
    let err = read_csv(&path, &CsvOptions::default()).unwrap_err();
    assert!(matches!(err, TableError::Gzip { .. }), "{err:?}");
    assert!(err.to_string().contains("cut.csv.gz"), "{err}");
}

#[test]
fn a_gzipped_tsv_is_detected_as_tab_separated_and_named_without_suffixes() {
    let dir = scratch("tsv");
    let path = dir.join("cities.tsv.gz");
    std::fs::write(&path, gzip(b"city\tcountry\nOslo\tNorway\n")).unwrap();
    let table = read_csv(&path, &CsvOptions::default()).unwrap();
    assert_eq!(table.id, "cities");
    assert_eq!(table.n_columns(), 2);
    assert_eq!(table.columns[1].header.as_deref(), Some("country"));
}
