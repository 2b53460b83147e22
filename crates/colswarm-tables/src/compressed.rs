//! Compressed inputs, read as they are stored.
//!
//! - A file whose name ends in `.gz` is read through a gzip decoder wherever a plain file is
//!   read ([`open_input`]): `cv_0.csv.gz`, `table.tsv.gz`, `labels.csv.gz`. Errors name the
//!   compressed file and the line inside it.
//! - A folder layout such as T2D's (`tables/`, `attributes/`, `classes_complete.csv`) may be one
//!   `.tar.gz` / `.tgz` archive instead of a directory ([`DataFolder`]). The archive is
//!   decompressed once into memory; a file inside it is named `ARCHIVE/inner/path` in errors.
//!   An archive whose entries all sit under one top-level folder (`t2d/tables/…`, as `tar czf
//!   t2d.tar.gz t2d` makes it) is read as that folder.
//!
//! Why decompress into memory rather than stream: a tar archive is sequential, while a layout
//! reader visits its files in its own order (the class list first, then each attribute file
//! with its table). The benchmark archives hold tens of megabytes at most.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use crate::error::{Result, TableError};

const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Whether `path` names a gzip file (its name ends in `.gz`, any case).
pub fn is_gzip(path: &Path) -> bool {
    lower_name(path).ends_with(".gz")
}

/// Whether `path` names a gzipped tar archive (`.tar.gz` or `.tgz`, any case).
pub fn is_tar_gz(path: &Path) -> bool {
    let name = lower_name(path);
    name.ends_with(".tar.gz") || name.ends_with(".tgz")
}

/// The file name without a `.gz` suffix and then without its extension: the table id a file
/// gives (`cities.csv.gz` → `cities`, `cities.csv` → `cities`).
pub fn file_stem_uncompressed(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = strip_suffix_ignore_case(&name, ".gz").unwrap_or(&name);
    match name.rfind('.') {
        Some(dot) if dot > 0 => name[..dot].to_string(),
        _ => name.to_string(),
    }
}

/// The extension a file has once a `.gz` suffix is set aside, lower-cased (`x.TSV.gz` → `tsv`).
pub fn extension_uncompressed(path: &Path) -> Option<String> {
    let name = lower_name(path);
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let dot = name.rfind('.')?;
    (dot > 0).then(|| name[dot + 1..].to_string())
}

/// Opens a file for buffered reading, through a gzip decoder when its name ends in `.gz`.
///
/// The decoder runs on a thread of its own, a few blocks ahead of the reader, so that with two
/// cores most of the decoding overlaps the parsing (a `.csv.gz` loads in about 1.07 times a
/// plain file's time: BENCHMARKS.md). A corrupt or truncated gzip stream surfaces as an error
/// when the bytes are read ([`TableError::read`] names `path`).
pub fn open_input(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let file = File::open(path).map_err(|e| TableError::io(path, e))?;
    Ok(if is_gzip(path) {
        // The blocks are the buffer: no second copy through a `BufReader`.
        Box::new(
            AheadReader::spawn(MultiGzDecoder::new(BufReader::with_capacity(
                READ_BUFFER_BYTES,
                file,
            )))
            .map_err(|e| TableError::io(path, e))?,
        )
    } else {
        Box::new(BufReader::with_capacity(READ_BUFFER_BYTES, file))
    })
}

/// Bytes a decoding thread hands over at a time, and how many such blocks it may run ahead.
const AHEAD_BLOCK_BYTES: usize = 64 * 1024;
const AHEAD_BLOCKS: usize = 16;

/// Reads another reader on a thread of its own, [`AHEAD_BLOCKS`] blocks ahead of the caller
/// (memory stays bounded).
struct AheadReader {
    blocks: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    block: Vec<u8>,
    position: usize,
    finished: bool,
}

impl AheadReader {
    /// Starts the thread reading `inner` (an error only when no thread can be started).
    fn spawn(mut inner: impl Read + Send + 'static) -> std::io::Result<Self> {
        let (sender, blocks) = std::sync::mpsc::sync_channel(AHEAD_BLOCKS);
        std::thread::Builder::new()
            .name("colswarm-gunzip".into())
            .spawn(move || {
                loop {
                    let mut block = vec![0; AHEAD_BLOCK_BYTES];
                    let mut filled = 0;
                    let result = loop {
                        match inner.read(&mut block[filled..]) {
                            Ok(0) => break Ok(()),
                            Ok(n) => {
                                filled += n;
                                if filled == block.len() {
                                    break Ok(());
                                }
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(e) => break Err(e),
                        }
                    };
                    block.truncate(filled);
                    // A short block is the last one; the reader knows it by its length.
                    let last = filled < AHEAD_BLOCK_BYTES || result.is_err();
                    // A dropped receiver (the caller stopped reading) ends the thread.
                    if sender.send(result.map(|()| block)).is_err() || last {
                        return;
                    }
                }
            })?;
        Ok(AheadReader {
            blocks,
            block: Vec::new(),
            position: 0,
            finished: false,
        })
    }
}

impl BufRead for AheadReader {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        while self.position == self.block.len() && !self.finished {
            match self.blocks.recv() {
                Ok(Ok(next)) => {
                    self.finished = next.len() < AHEAD_BLOCK_BYTES;
                    self.block = next;
                    self.position = 0;
                }
                Ok(Err(e)) => {
                    self.finished = true;
                    return Err(e);
                }
                // The thread ended without its last block: it panicked.
                Err(_) => {
                    self.finished = true;
                    return Err(std::io::Error::other("the decoding thread stopped"));
                }
            }
        }
        Ok(&self.block[self.position..])
    }

    fn consume(&mut self, amount: usize) {
        self.position = (self.position + amount).min(self.block.len());
    }
}

impl Read for AheadReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = out.len().min(available.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

/// A folder of files: a directory on disk, or a `.tar.gz` archive of one.
#[derive(Debug)]
pub enum DataFolder {
    /// A directory.
    Directory(PathBuf),
    /// An archive, decompressed: its path, and each regular file's bytes by its path inside
    /// (`/`-separated, relative to the folder the archive holds).
    Archive {
        /// The archive file.
        path: PathBuf,
        /// Inner path → contents.
        files: BTreeMap<String, Vec<u8>>,
    },
}

impl DataFolder {
    /// Opens `path`: an archive when its name ends in `.tar.gz` / `.tgz`, else a directory.
    pub fn open(path: &Path) -> Result<DataFolder> {
        if is_tar_gz(path) {
            Ok(DataFolder::Archive {
                path: path.to_path_buf(),
                files: read_tar_gz(path)?,
            })
        } else {
            Ok(DataFolder::Directory(path.to_path_buf()))
        }
    }

    /// How a file inside the folder is named in errors (`DIR/inner` or `ARCHIVE/inner`).
    pub fn display_path(&self, inner: &str) -> PathBuf {
        match self {
            DataFolder::Directory(dir) => dir.join(inner),
            DataFolder::Archive { path, .. } => path.join(inner),
        }
    }

    /// The names of the files with `extension` directly in `subfolder`, sorted.
    pub fn list(&self, subfolder: &str, extension: &str) -> Result<Vec<String>> {
        let suffix = format!(".{extension}");
        let mut names: Vec<String> = match self {
            DataFolder::Directory(dir) => {
                let folder = dir.join(subfolder);
                let mut names = Vec::new();
                for entry in std::fs::read_dir(&folder).map_err(|e| TableError::io(&folder, e))? {
                    let entry = entry.map_err(|e| TableError::io(&folder, e))?;
                    names.push(entry.file_name().to_string_lossy().into_owned());
                }
                names
            }
            DataFolder::Archive { path, files } => {
                let prefix = format!("{subfolder}/");
                let names: Vec<String> = files
                    .keys()
                    .filter_map(|key| key.strip_prefix(&prefix))
                    .filter(|name| !name.contains('/'))
                    .map(str::to_string)
                    .collect();
                if names.is_empty() && !files.keys().any(|key| key.starts_with(&prefix)) {
                    return Err(TableError::Dataset {
                        path: path.clone(),
                        reason: format!("the archive has no `{subfolder}/` folder"),
                    });
                }
                names
            }
        };
        names.retain(|name| name.ends_with(&suffix));
        names.sort();
        Ok(names)
    }

    /// Opens the file at `inner` (`/`-separated) for reading.
    pub fn open_file(&self, inner: &str) -> Result<Box<dyn BufRead + Send + '_>> {
        match self {
            DataFolder::Directory(dir) => {
                let path = dir.join(inner);
                let file = File::open(&path).map_err(|e| TableError::io(&path, e))?;
                Ok(Box::new(BufReader::with_capacity(READ_BUFFER_BYTES, file)))
            }
            DataFolder::Archive { files, .. } => match files.get(inner) {
                Some(bytes) => Ok(Box::new(bytes.as_slice())),
                None => Err(TableError::io(
                    self.display_path(inner),
                    std::io::Error::new(std::io::ErrorKind::NotFound, "not in the archive"),
                )),
            },
        }
    }
}

/// Every regular file of a `.tar.gz`, by its inner path; a single top-level folder holding
/// everything is stripped.
fn read_tar_gz(path: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    let file = File::open(path).map_err(|e| TableError::io(path, e))?;
    let decoder = MultiGzDecoder::new(BufReader::with_capacity(READ_BUFFER_BYTES, file));
    let mut archive =
        tar::Archive::new(AheadReader::spawn(decoder).map_err(|e| TableError::io(path, e))?);
    let mut files = BTreeMap::new();
    for entry in archive.entries().map_err(|e| TableError::read(path, e))? {
        let mut entry = entry.map_err(|e| TableError::read(path, e))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let inner = entry.path().map_err(|e| TableError::io(path, e))?;
        let inner = inner
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("/");
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| TableError::read(path, e))?;
        files.insert(inner, bytes);
    }
    Ok(strip_common_folder(files))
}

/// `top/a`, `top/b/c` → `a`, `b/c` when every file sits under the same `top/`.
fn strip_common_folder(files: BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    let top = |key: &str| key.split_once('/').map(|(top, _)| top.to_string());
    let Some(first) = files.keys().next().and_then(|k| top(k)) else {
        return files;
    };
    if !files
        .keys()
        .all(|k| top(k).as_deref() == Some(first.as_str()))
    {
        return files;
    }
    let prefix = format!("{first}/");
    files
        .into_iter()
        .map(|(key, bytes)| (key[prefix.len()..].to_string(), bytes))
        .collect()
}

fn lower_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default()
}

fn strip_suffix_ignore_case<'a>(name: &'a str, suffix: &str) -> Option<&'a str> {
    let cut = name.len().checked_sub(suffix.len())?;
    (name.is_char_boundary(cut) && name[cut..].eq_ignore_ascii_case(suffix)).then(|| &name[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("colswarm-compressed-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    fn tar_gz(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, bytes) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, name, *bytes).unwrap();
        }
        gzip(&builder.into_inner().unwrap())
    }

    #[test]
    fn names_set_the_gzip_suffix_aside() {
        assert!(is_gzip(Path::new("a/cv_0.CSV.GZ")));
        assert!(!is_gzip(Path::new("a/cv_0.csv")));
        assert!(is_tar_gz(Path::new("t2d.tar.gz")) && is_tar_gz(Path::new("t2d.tgz")));
        assert!(!is_tar_gz(Path::new("t.csv.gz")));
        assert_eq!(
            file_stem_uncompressed(Path::new("d/cities.csv.gz")),
            "cities"
        );
        assert_eq!(file_stem_uncompressed(Path::new("d/cities.csv")), "cities");
        assert_eq!(file_stem_uncompressed(Path::new("d/a.b.tsv")), "a.b");
        assert_eq!(
            extension_uncompressed(Path::new("x.TSV.gz")).as_deref(),
            Some("tsv")
        );
        assert_eq!(extension_uncompressed(Path::new("x")), None);
    }

    #[test]
    fn a_gzip_file_reads_as_its_contents() {
        let dir = temp_dir("gzip");
        let path = dir.join("t.csv.gz");
        std::fs::write(&path, gzip(b"a,b\n1,2\n")).unwrap();
        let mut text = String::new();
        open_input(&path)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "a,b\n1,2\n");
    }

    #[test]
    fn the_reader_ahead_hands_over_every_byte_in_order() {
        // Sizes around the block size: empty, short, exactly one and two blocks, and between.
        for len in [
            0,
            7,
            AHEAD_BLOCK_BYTES,
            2 * AHEAD_BLOCK_BYTES,
            3 * AHEAD_BLOCK_BYTES + 11,
        ] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let mut read = Vec::new();
            AheadReader::spawn(std::io::Cursor::new(bytes.clone()))
                .unwrap()
                .read_to_end(&mut read)
                .unwrap();
            assert_eq!(read, bytes, "{len} bytes");
        }
    }

    #[test]
    fn the_reader_ahead_passes_an_error_on() {
        struct Failing(usize);
        impl Read for Failing {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                if self.0 == 0 {
                    return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "bad"));
                }
                let n = out.len().min(self.0);
                self.0 -= n;
                Ok(n)
            }
        }
        let mut read = Vec::new();
        let err = AheadReader::spawn(Failing(AHEAD_BLOCK_BYTES + 5))
            .unwrap()
            .read_to_end(&mut read)
            .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    }

    #[test]
    fn a_corrupt_gzip_file_is_an_error_naming_it() {
        let dir = temp_dir("corrupt");
        let path = dir.join("broken.csv.gz");
        let mut bytes = gzip(b"a,b\n1,2\n");
        bytes.truncate(bytes.len() / 2);
        std::fs::write(&path, bytes).unwrap();
        let mut text = String::new();
        let err = open_input(&path)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap_err();
        let err = TableError::read(&path, err).to_string();
        assert!(
            err.contains("broken.csv.gz") && err.contains("gzip"),
            "{err}"
        );
    }

    #[test]
    fn an_archive_lists_and_opens_like_a_directory() {
        let dir = temp_dir("archive");
        let plain = dir.join("plain");
        std::fs::create_dir_all(plain.join("tables")).unwrap();
        std::fs::write(plain.join("tables/b.csv"), "x\n2\n").unwrap();
        std::fs::write(plain.join("tables/a.csv"), "x\n1\n").unwrap();
        std::fs::write(plain.join("tables/notes.txt"), "-").unwrap();
        let archive = dir.join("set.tar.gz");
        std::fs::write(
            &archive,
            tar_gz(&[
                ("set/tables/b.csv", b"x\n2\n"),
                ("set/tables/a.csv", b"x\n1\n"),
                ("set/tables/notes.txt", b"-"),
            ]),
        )
        .unwrap();
        for folder in [&plain, &archive] {
            let folder = DataFolder::open(folder).unwrap();
            assert_eq!(folder.list("tables", "csv").unwrap(), ["a.csv", "b.csv"]);
            let mut text = String::new();
            folder
                .open_file("tables/b.csv")
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            assert_eq!(text, "x\n2\n");
        }
        let folder = DataFolder::open(&archive).unwrap();
        let missing = folder.open_file("tables/c.csv").err().unwrap().to_string();
        assert!(missing.contains("set.tar.gz/tables/c.csv"), "{missing}");
        let no_folder = folder.list("attributes", "csv").unwrap_err().to_string();
        assert!(no_folder.contains("attributes/"), "{no_folder}");
    }
}
