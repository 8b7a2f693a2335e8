//! The model's vectors of catalog texts, kept for the life of the process
//! and in a file of the cache directory, so that a catalog's index is built
//! from the model once and later read back.
//!
//! A vector read from the file, or appended to it, stays there: the process
//! holds its place in the file, not the vector. With the union's 22,000
//! example requests the vectors are some 35 MB; held in memory (as half
//! floats) they were most of a server's margin under its memory budget.
//! A vector that could not be placed in the file (no cache directory, a
//! write that failed) is held in memory in half floats.

use std::{
    collections::HashMap,
    fs::File,
    io::{BufReader, Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
    sync::{Mutex, PoisonError},
};

use sha2::{Digest, Sha256};

/// A text's key: the first half of its SHA-256 (the text itself is not
/// stored).
pub(super) type Key = [u8; 16];

pub(super) fn key(text: &str) -> Key {
    let digest = Sha256::digest(text.as_bytes());
    let mut key = [0; 16];
    key.copy_from_slice(&digest[..16]);
    key
}

/// Where a known text's vector is.
enum Place {
    /// In the cache file, its `dims` f32 at this offset.
    File(u64),
    /// In memory, in half floats: the cosines they give differ from the
    /// f32 ones by about 1e-4.
    Memory(Box<[half::f16]>),
    /// The text has no vector (no known token).
    Nothing,
}

fn to_half(vector: &[f32]) -> Box<[half::f16]> {
    vector.iter().map(|&x| half::f16::from_f32(x)).collect()
}

fn widened(half: &[half::f16]) -> Vec<f32> {
    half.iter().map(|x| x.to_f32()).collect()
}

/// The cache file: one handle reads records at their offsets, the other
/// appends them; both are the same file, opened together.
struct CacheFile {
    path: PathBuf,
    reader: Mutex<File>,
    appender: Mutex<File>,
}

/// Known texts' vectors, by key.
pub(super) struct VectorStore {
    dims: usize,
    places: Mutex<HashMap<Key, Place>>,
    file: Option<CacheFile>,
}

impl VectorStore {
    /// A store that keeps vectors in memory only.
    pub(super) fn in_memory(dims: usize) -> Self {
        VectorStore {
            dims,
            places: Mutex::new(HashMap::new()),
            file: None,
        }
    }

    /// A store over the cache file `path`: its records are known from now
    /// on, and new vectors are appended to it. A file past `limit` bytes
    /// (each catalog a process meets adds its texts) is started over: left
    /// as it is, every process would encode its catalog again. A file that
    /// cannot be opened only costs time (logged): the store keeps vectors
    /// in memory.
    pub(super) fn open(path: &Path, dims: usize, limit: u64) -> Self {
        let mut store = VectorStore::in_memory(dims);
        match open_file(path, limit) {
            Ok((reader, appender)) => {
                let read = read_records(
                    &reader,
                    dims,
                    store
                        .places
                        .get_mut()
                        .unwrap_or_else(PoisonError::into_inner),
                );
                if read > 0 {
                    tracing::debug!(file = %path.display(), read, "embedding vectors read from the cache");
                }
                store.file = Some(CacheFile {
                    path: path.to_path_buf(),
                    reader: Mutex::new(reader),
                    appender: Mutex::new(appender),
                });
            }
            Err(error) => tracing::warn!(
                file = %path.display(),
                %error,
                "the embedding cache cannot be used; vectors are computed again in each process"
            ),
        }
        store
    }

    /// The vector kept for `key`: `None` if there is none, `Some(None)` if
    /// the text is known to have no vector.
    pub(super) fn get(&self, key: &Key) -> Option<Option<Vec<f32>>> {
        let offset = match self
            .places
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)?
        {
            Place::Nothing => return Some(None),
            Place::Memory(half) => return Some(Some(widened(half))),
            Place::File(offset) => *offset,
        };
        let file = self.file.as_ref()?;
        match read_vector(&file.reader, offset, self.dims) {
            Ok(vector) => Some(Some(vector)),
            Err(error) => {
                tracing::debug!(%error, file = %file.path.display(), "cannot read a kept embedding vector");
                None
            }
        }
    }

    /// Keeps `vector` for `key` and returns it as [`Self::get`] will: a
    /// vector is the same whether it was just computed or read back.
    pub(super) fn keep(&self, key: Key, vector: Option<Vec<f32>>) -> Option<Vec<f32>> {
        let Some(vector) = vector else {
            self.places
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key, Place::Nothing);
            return None;
        };
        let (place, handed) = match self.append(&key, &vector) {
            Some(offset) => (Place::File(offset), vector),
            None => {
                let half = to_half(&vector);
                let handed = widened(&half);
                (Place::Memory(half), handed)
            }
        };
        self.places
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, place);
        Some(handed)
    }

    /// Appends a record; the offset of its vector if it is now in the file
    /// where this store reads.
    fn append(&self, key: &Key, vector: &[f32]) -> Option<u64> {
        let file = self.file.as_ref()?;
        let record = record(key, vector);
        let written = (|| -> std::io::Result<u64> {
            let mut appender = file.appender.lock().unwrap_or_else(PoisonError::into_inner);
            appender.write_all(&record)?;
            // Appended at the end, whatever other processes wrote before.
            appender.stream_position()
        })();
        let end = match written {
            Ok(end) => end,
            Err(error) => {
                tracing::debug!(%error, file = %file.path.display(), "cannot keep an embedding vector");
                return None;
            }
        };
        let start = end.checked_sub(record.len() as u64)?;
        // Read back: the record is where this store will look for it.
        let mut found = vec![0u8; record.len()];
        read_at(&file.reader, start, &mut found).ok()?;
        (found == record).then_some(start + key.len() as u64)
    }

    /// How many vectors are held in memory rather than in the file.
    #[cfg(test)]
    fn in_memory_count(&self) -> usize {
        self.places
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter(|place| matches!(place, Place::Memory(_)))
            .count()
    }
}

/// A record of the cache file: the 16-byte key, then `dims` little-endian
/// f32. Each is appended by one write, so processes sharing the file add
/// whole records.
fn record(key: &Key, vector: &[f32]) -> Vec<u8> {
    let mut record = Vec::with_capacity(16 + vector.len() * 4);
    record.extend_from_slice(key);
    for x in vector {
        record.extend_from_slice(&x.to_le_bytes());
    }
    record
}

/// Opens `path` for reading and appending, creating it (and its folder),
/// or starting it over past `limit` bytes. Both handles are checked to be
/// the same file: another process may start it over at any time.
fn open_file(path: &Path, limit: u64) -> std::io::Result<(File, File)> {
    let size = std::fs::metadata(path).map_or(0, |meta| meta.len());
    if size > limit {
        // Another process may have started it over first.
        if let Err(error) = std::fs::remove_file(path)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            return Err(error);
        }
        tracing::info!(file = %path.display(), size, limit, "the embedding cache had grown past its limit; started a new one");
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let appender = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let reader = File::open(path)?;
    if !same_file(&reader, &appender)? {
        return Err(std::io::Error::other(
            "the file was replaced while it was opened",
        ));
    }
    Ok((reader, appender))
}

#[cfg(unix)]
fn same_file(a: &File, b: &File) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (a.metadata()?, b.metadata()?);
    Ok(a.dev() == b.dev() && a.ino() == b.ino())
}

#[cfg(not(unix))]
fn same_file(_: &File, _: &File) -> std::io::Result<bool> {
    Ok(true)
}

/// Reads the records of `file` into `into`, as places in the file. A torn
/// last record, or one that is not a unit vector (damage, or a file written
/// by something else), is skipped. Read a record at a time through a
/// buffer: the union's file is 35 MB.
fn read_records(file: &File, dims: usize, into: &mut HashMap<Key, Place>) -> usize {
    let mut source = BufReader::new(file);
    let mut record = vec![0u8; 16 + dims * 4];
    let mut offset = 0u64;
    let mut read = 0;
    while source.read_exact(&mut record).is_ok() {
        let (head, body) = record.split_at(16);
        let norm: f32 = floats(body).map(|x| x * x).sum();
        if (norm - 1.0).abs() < 1e-3 {
            let mut key = [0; 16];
            key.copy_from_slice(head);
            into.insert(key, Place::File(offset + 16));
            read += 1;
        }
        offset += record.len() as u64;
    }
    read
}

fn read_at(reader: &Mutex<File>, offset: u64, into: &mut [u8]) -> std::io::Result<()> {
    let mut reader = reader.lock().unwrap_or_else(PoisonError::into_inner);
    reader.seek(SeekFrom::Start(offset))?;
    reader.read_exact(into)
}

fn read_vector(reader: &Mutex<File>, offset: u64, dims: usize) -> std::io::Result<Vec<f32>> {
    let mut bytes = vec![0u8; dims * 4];
    read_at(reader, offset, &mut bytes)?;
    Ok(floats(&bytes).collect())
}

/// The little-endian f32 of a record's body.
fn floats(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damaged_records_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors.bin");
        let mut bytes = Vec::new();
        let good = [0.5f32, 0.5, 0.5, 0.5];
        let bad = [f32::NAN, 0.0, 0.0, 0.0];
        let long = [3.0f32, 0.0, 0.0, 0.0];
        for (n, vector) in [bad, good, long].iter().enumerate() {
            bytes.extend_from_slice(&record(&[n as u8; 16], vector));
        }
        bytes.extend_from_slice(&[9; 20]); // a torn last record
        std::fs::write(&path, bytes).unwrap();
        let store = VectorStore::open(&path, 4, 1 << 20);
        assert_eq!(store.get(&[1u8; 16]), Some(Some(good.to_vec())));
        assert_eq!(store.get(&[0u8; 16]), None);
        assert_eq!(store.get(&[2u8; 16]), None);
        assert_eq!(store.in_memory_count(), 0, "read ones stay in the file");
    }

    #[test]
    fn kept_vectors_read_back_the_same_in_another_process() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/vectors.bin");
        let first = VectorStore::open(&path, 2, 1 << 20);
        let vector = vec![0.6f32, 0.8];
        let handed = first.keep(key("a"), Some(vector.clone()));
        assert_eq!(handed, Some(vector.clone()));
        assert_eq!(first.keep(key("none"), None), None);
        assert_eq!(first.get(&key("a")), Some(Some(vector.clone())));
        assert_eq!(first.get(&key("none")), Some(None));
        assert_eq!(first.in_memory_count(), 0, "kept in the file only");
        let second = VectorStore::open(&path, 2, 1 << 20);
        assert_eq!(second.get(&key("a")), Some(Some(vector)));
        assert_eq!(second.get(&key("none")), None, "no vector is not written");
    }

    #[test]
    fn without_a_file_vectors_are_held_in_half_floats() {
        let store = VectorStore::in_memory(2);
        let handed = store.keep(key("a"), Some(vec![0.6, 0.8])).unwrap();
        assert!(
            handed
                .iter()
                .zip([0.6, 0.8])
                .all(|(h, v)| (h - v).abs() < 1e-3)
        );
        assert_eq!(store.get(&key("a")), Some(Some(handed)));
        assert_eq!(store.in_memory_count(), 1);
    }

    #[test]
    fn a_file_grown_past_its_limit_is_started_over() {
        // A record of two dimensions takes 24 bytes.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors.bin");
        let store = VectorStore::open(&path, 2, 40);
        store.keep(key("a"), Some(vec![0.6, 0.8]));
        let store = VectorStore::open(&path, 2, 40);
        assert!(store.get(&key("a")).is_some(), "under the limit it is read");
        store.keep(key("b"), Some(vec![1.0, 0.0]));
        let store = VectorStore::open(&path, 2, 40);
        assert_eq!(store.get(&key("a")), None, "past the limit nothing is read");
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            0,
            "and the file starts empty"
        );
        store.keep(key("c"), Some(vec![0.0, 1.0]));
        let store = VectorStore::open(&path, 2, 40);
        assert_eq!(store.get(&key("c")), Some(Some(vec![0.0, 1.0])));
    }

    #[test]
    fn a_cache_folder_that_cannot_be_made_leaves_vectors_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("a-file");
        std::fs::write(&blocker, b"x").unwrap();
        let store = VectorStore::open(&blocker.join("vectors.bin"), 2, 1 << 20);
        assert!(store.keep(key("a"), Some(vec![1.0, 0.0])).is_some());
        assert_eq!(store.in_memory_count(), 1);
    }
}
