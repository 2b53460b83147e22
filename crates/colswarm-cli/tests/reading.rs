//! How `annotate` reads a user's files: text encodings.

mod common;

use common::{colswarm, stdout, windows_1252};

/// A small table of German cities, as text.
const CITIES: &str = "Stadt;Größe;Land\nMünchen;1.512.491;Deutschland\nKöln;1.087.863;Deutschland\n\
                      Zürich;421.878;Schweiz\nGraz;291.134;Österreich\n";

#[test]
fn a_windows_1252_file_annotates_as_its_utf8_twin_once_its_encoding_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let utf8 = dir.path().join("utf8").join("cities.csv");
    let cp1252 = dir.path().join("cp1252").join("cities.csv");
    for (path, bytes) in [
        (&utf8, CITIES.as_bytes().to_vec()),
        (&cp1252, windows_1252(CITIES)),
    ] {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    let annotate = |path: &std::path::Path, extra: &[&str]| {
        let mut args = vec!["annotate", "--model", "models/colswarm-small"];
        args.extend_from_slice(extra);
        args.push(path.to_str().unwrap());
        colswarm(&args)
    };

    // Read as UTF-8 (the default), the file is refused where its first non-ASCII byte is,
    // and the error says what to do.
    let refused = annotate(&cp1252, &[]);
    assert!(!refused.status.success());
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(
        error.contains("cities.csv: line 1, column index 1"),
        "{error}"
    );
    assert!(error.contains("windows-1252"), "{error}");

    let expected = stdout(&annotate(&utf8, &[]));
    for name in ["windows-1252", "latin-1", "ISO-8859-1"] {
        let out = annotate(&cp1252, &["--encoding", name]);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(stdout(&out), expected, "{name}");
    }
    let annotation: serde_json::Value = serde_json::from_str(expected.trim()).unwrap();
    assert_eq!(annotation["columns"][1]["header"], "Größe");
    // `auto` reads a folder of both kinds, each file as it was written.
    let both = dir.path().join("both");
    std::fs::create_dir_all(&both).unwrap();
    std::fs::copy(&utf8, both.join("a-utf8.csv")).unwrap();
    std::fs::copy(&cp1252, both.join("b-cp1252.csv")).unwrap();
    let out = annotate(&both, &["--encoding", "auto"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    let expected = expected.trim();
    assert_eq!(
        lines,
        [
            expected.replace("\"table\":\"cities\"", "\"table\":\"a-utf8\""),
            expected.replace("\"table\":\"cities\"", "\"table\":\"b-cp1252\""),
        ]
    );

    let unknown = annotate(&cp1252, &["--encoding", "utf-16"]);
    assert!(!unknown.status.success());
    let error = String::from_utf8_lossy(&unknown.stderr);
    assert!(error.contains("unknown text encoding `utf-16`"), "{error}");

    // UTF-16 ("Unicode text" in spreadsheet programs) is named as such, not as bad UTF-8.
    let utf16 = dir.path().join("unicode.csv");
    let bytes: Vec<u8> = "\u{feff}"
        .chars()
        .chain(CITIES.chars())
        .collect::<String>()
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    std::fs::write(&utf16, bytes).unwrap();
    let refused = annotate(&utf16, &["--encoding", "windows-1252"]);
    assert!(!refused.status.success());
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(error.contains("unicode.csv: the file is UTF-16"), "{error}");
}

#[test]
fn annotate_names_each_file_it_repaired_and_sums_up_what_reading_changed() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| std::fs::write(dir.path().join(name), bytes).unwrap();
    write("a-clean.csv", CITIES.as_bytes());
    // One cell saved by a Windows program in a UTF-8 file.
    let mut mixed = CITIES.as_bytes().to_vec();
    mixed.extend_from_slice(b"Br\xfcnn;380.000;Tschechien\n");
    write("b-mixed.csv", &mixed);
    write(
        "c-ragged.csv",
        b"city,country\nParis,France\nLyon\nRome,Italy\n",
    );
    let long: String = std::iter::once("n,square\n".to_string())
        .chain((0..1500).map(|i| format!("{i},{}\n", i * i)))
        .collect();
    write("d-long.csv", long.as_bytes());
    // A workbook beside them is passed over, and said so.
    write("e-sheet.xlsx", b"PK\x03\x04");
    let annotate = |extra: &[&str]| {
        let mut args = vec!["annotate", "--model", "models/colswarm-small"];
        args.extend_from_slice(extra);
        args.push(dir.path().to_str().unwrap());
        colswarm(&args)
    };

    let out = annotate(&["--encoding", "auto"]);
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{error}");
    assert_eq!(stdout(&out).lines().count(), 4);
    let lines: Vec<&str> = error.lines().collect();
    let file = |name: &str| dir.path().join(name).display().to_string();
    assert_eq!(
        lines,
        [
            format!(
                "not read: 1 spreadsheet workbook, such as {}, which colswarm does not read: save \
                 each sheet as CSV",
                file("e-sheet.xlsx")
            ),
            format!("{}: 1 cell read as Windows-1252", file("b-mixed.csv")),
            format!(
                "{}: 1 ragged row padded with empty cells",
                file("c-ragged.csv")
            ),
            "read: 2 of 4 table files repaired in reading (each is named above): 1 cell read as \
             Windows-1252, 1 ragged row padded with empty cells; 1 of 4 table files longer than \
             1000 rows, read from an even sample of their rows (500 rows left out)"
                .to_string(),
        ],
        "{error}"
    );

    // Lossy mode names the bytes it replaced; a clean file says nothing.
    for name in ["c-ragged.csv", "d-long.csv", "e-sheet.xlsx"] {
        std::fs::remove_file(dir.path().join(name)).unwrap();
    }
    let out = annotate(&["--lossy"]);
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{error}");
    assert_eq!(
        error.lines().next(),
        Some(
            format!(
                "{}: 1 invalid UTF-8 byte replaced with U+FFFD",
                file("b-mixed.csv")
            )
            .as_str()
        ),
        "{error}"
    );
    // Standard input is named as such.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_colswarm"))
        .current_dir(common::root())
        .args(["annotate", "--model", "models/colswarm-small", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"a,b\n1\n2,3\n").unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).lines().next(),
        Some("stdin: 1 ragged row padded with empty cells")
    );
    std::fs::remove_file(dir.path().join("b-mixed.csv")).unwrap();
    let out = annotate(&[]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
