//! Reading `staticPodPath` (upstream `sourceFile.listConfig` /
//! `extractFromDir`). Blocking: the [`FileSource`] runs it on the blocking
//! pool.
//!
//! - A directory: every entry whose name does not start with `.` (upstream
//!   globs `[^.]*`: whatever the extension, so `pod.manifest` or an editor's
//!   `pod.yaml~` is read too — the latter reported if it does not parse),
//!   sorted by name, that is a regular file after following symlinks.
//!   Subdirectories are not entered.
//! - A regular file: that file alone, whatever its name.
//! - A path that does not exist: [`ScanOutcome::Missing`] (upstream sends an
//!   empty set, so the source's pods go away and the source counts as seen).
//! - Anything else (not listable, neither file nor directory):
//!   [`ScanOutcome::Failed`]; the caller keeps what it had (upstream returns
//!   the error without sending).
//!
//! A file that vanishes between listing and reading is skipped like a deleted
//! one; one that cannot be read, is over [`MAX_MANIFEST_BYTES`] or is not
//! UTF-8 is a [`manifest::Error::Read`] for its path.
//!
//! Upstream parses every manifest again at every re-read (every 20 s,
//! `fileCheckFrequency`): at 10k static pods that was a fifth of an idle
//! node's CPU. [`scan_cached`] keeps what each file gave with the file's
//! [`FileStamp`] (device, inode, size, modification and change times, after
//! symlinks) and reads only files whose stamp changed; an unchanged file's
//! pods are then the very same allocations (the merge sees them unchanged
//! without comparing). Read errors are not kept: the next scan tries again.
//! A scan that finds the same files, all unchanged, copies nothing
//! ([`ScanOutcome::Unchanged`]): an idle node's re-read is a listing and a
//! `stat` per file.
//!
//! [`FileSource`]: crate::config::FileSource

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::last_good::ManifestRead;
use crate::config::manifest::{self, MAX_MANIFEST_BYTES};
use crate::config::static_pod::{ManifestOrigin, load_static_pods};

/// What one scan of the static pod path found.
#[derive(Debug)]
pub enum ScanOutcome {
    /// The path exists: one read per manifest, in name order.
    Read(Vec<ManifestRead>),
    /// The same files as the last scan with the same cache, every one
    /// unchanged and read without error: that scan's reads
    /// ([`ScanCache::reads`]) stand ([`scan_cached`] only).
    Unchanged,
    /// The path does not exist.
    Missing,
    /// The path could not be listed; the reason.
    Failed(String),
}

/// Whether a directory entry named `name` is a manifest.
pub fn is_manifest_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.')
}

/// What identifies one version of a file without reading it: device,
/// inode, size, modification and change times (nanoseconds). An edit in
/// place changes the times, a rename over it the inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    /// The stamp of `metadata` (of the file a symlink points to, if `fs::metadata`).
    pub fn of(metadata: &fs::Metadata) -> Self {
        Self {
            dev: metadata.dev(),
            ino: metadata.ino(),
            size: metadata.size(),
            mtime: (metadata.mtime(), metadata.mtime_nsec()),
            ctime: (metadata.ctime(), metadata.ctime_nsec()),
        }
    }
}

/// What the last scan read from each file, with the file's stamp then
/// ([`scan_cached`]). Owned by the file source; losing it only costs a parse.
#[derive(Debug, Default)]
pub struct ScanCache {
    /// By file name (a file path: by the path), so in name order.
    files: BTreeMap<String, (FileStamp, ManifestRead)>,
    /// The last scan read the same files, all unchanged, as the one before.
    unchanged: bool,
}

impl ScanCache {
    /// Files remembered.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file is remembered.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Whether the last [`scan_cached`] found exactly the files of the scan
    /// before it, every one unchanged and read without error: its outcome
    /// holds the same reads (the same pod allocations) as that scan's.
    pub fn last_scan_unchanged(&self) -> bool {
        self.unchanged
    }

    /// The reads of the files remembered, in name order (the same pod
    /// allocations as the scans that read them).
    pub fn reads(&self) -> Vec<ManifestRead> {
        self.files.values().map(|(_, read)| read.clone()).collect()
    }
}

/// Scans `path` (a directory or a file) and loads every manifest for `node_name`.
pub fn scan(path: &Path, node_name: &str) -> ScanOutcome {
    scan_cached(path, node_name, &mut ScanCache::default())
}

/// [`scan`], reading only the files whose [`FileStamp`] differs from what
/// `cache` holds; `cache` then holds this scan's files (a file gone is
/// forgotten). When the scan finds exactly the files of the last one, all
/// unchanged, it answers [`ScanOutcome::Unchanged`] without copying a read:
/// [`ScanCache::reads`] has them.
///
/// ```
/// use actlet::config::file_scan::{ScanCache, ScanOutcome, scan_cached};
/// let dir = tempfile::tempdir().unwrap();
/// let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c, image: x}]}\n";
/// std::fs::write(dir.path().join("web.yaml"), pod).unwrap();
/// let mut cache = ScanCache::default();
/// let ScanOutcome::Read(first) = scan_cached(dir.path(), "node-1", &mut cache) else { panic!() };
/// let again = scan_cached(dir.path(), "node-1", &mut cache);
/// assert!(matches!(again, ScanOutcome::Unchanged));
/// let kept = cache.reads();
/// let (a, b) = (first[0].result.as_ref().unwrap(), kept[0].result.as_ref().unwrap());
/// assert!(std::sync::Arc::ptr_eq(&a[0], &b[0]), "not parsed again");
/// ```
pub fn scan_cached(path: &Path, node_name: &str, cache: &mut ScanCache) -> ScanOutcome {
    cache.unchanged = false;
    let metadata = match fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            cache.files.clear();
            return ScanOutcome::Missing;
        }
        Err(e) => return ScanOutcome::Failed(e.to_string()),
    };
    // (cache key, file, stamp) of every manifest, in name order.
    let found: Vec<(String, PathBuf, FileStamp)> = if metadata.is_file() {
        let key = path.display().to_string();
        vec![(key, path.to_path_buf(), FileStamp::of(&metadata))]
    } else if metadata.is_dir() {
        let entries = match fs::read_dir(path) {
            Ok(entries) => entries,
            Err(e) => return ScanOutcome::Failed(e.to_string()),
        };
        let mut names: Vec<_> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|name| is_manifest_name(name))
            .collect();
        names.sort();
        names
            .into_iter()
            .filter_map(|name| {
                let file = path.join(&name);
                match fs::metadata(&file) {
                    Ok(metadata) if metadata.is_file() => {
                        let stamp = FileStamp::of(&metadata);
                        Some((name, file, stamp))
                    }
                    Ok(_) => {
                        tracing::debug!(file = %file.display(), "not a regular file, not recursing into it");
                        None
                    }
                    Err(_) => None,
                }
            })
            .collect()
    } else {
        return ScanOutcome::Failed("path is not a directory or file".to_owned());
    };
    // The same files, every one unchanged (the first scan is a change; a
    // read error is not kept, so it is never unchanged).
    let unchanged = !cache.files.is_empty()
        && found.len() == cache.files.len()
        && found
            .iter()
            .zip(&cache.files)
            .all(|((key, _, stamp), (kept, (kept_stamp, _)))| key == kept && stamp == kept_stamp);
    if unchanged {
        cache.unchanged = true;
        return ScanOutcome::Unchanged;
    }
    let mut previous = std::mem::take(&mut cache.files);
    let reads = found
        .into_iter()
        .filter_map(|(key, file, stamp)| {
            if let Some((kept, read)) = previous.remove(&key)
                && kept == stamp
            {
                cache.files.insert(key, (stamp, read.clone()));
                return Some(read);
            }
            let read = read_manifest(&file, node_name)?;
            if !matches!(read.result, Err(manifest::Error::Read { .. })) {
                cache.files.insert(key, (stamp, read.clone()));
            }
            Some(read)
        })
        .collect();
    ScanOutcome::Read(reads)
}

/// Reads and loads one manifest file; `None` if it no longer exists.
pub fn read_manifest(file: &Path, node_name: &str) -> Option<ManifestRead> {
    let origin = file.display().to_string();
    let result = match read_capped(file) {
        // Stamped `config.seen` here, the merge stores these allocations
        // as they are: one copy of each pod (the scan cache's).
        Ok(body) => load_static_pods(&body, ManifestOrigin::File(&origin), node_name).map(|pods| {
            let now = crate::clock::system_now();
            pods.into_iter()
                .map(|mut pod| {
                    crate::config::annotations::stamp_seen(&mut pod, now);
                    Arc::new(pod)
                })
                .collect()
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => Err(manifest::Error::Read {
            origin: origin.clone(),
            reason: e.to_string(),
        }),
    };
    Some(ManifestRead { origin, result })
}

/// Reads a UTF-8 file of at most [`MAX_MANIFEST_BYTES`].
fn read_capped(file: &Path) -> io::Result<String> {
    let mut body = String::new();
    fs::File::open(file)?
        .take(MAX_MANIFEST_BYTES as u64 + 1)
        .read_to_string(&mut body)?;
    if body.len() > MAX_MANIFEST_BYTES {
        return Err(io::Error::other(format!("larger than {MAX_MANIFEST_BYTES} bytes")));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: NAME}\nspec: {containers: [{name: c, image: x}]}\n";

    fn write(dir: &Path, file: &str, pod_name: &str) {
        fs::write(dir.join(file), POD.replace("NAME", pod_name)).unwrap();
    }

    fn summary(outcome: ScanOutcome) -> Vec<(String, Result<Vec<String>, String>)> {
        let ScanOutcome::Read(reads) = outcome else {
            panic!("{outcome:?}")
        };
        reads
            .into_iter()
            .map(|read| {
                let file = Path::new(&read.origin)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let result = read
                    .result
                    .map(|pods| pods.into_iter().map(|p| p.metadata.name.clone().unwrap()).collect())
                    .map_err(|e| e.reason());
                (file, result)
            })
            .collect()
    }

    #[test]
    fn manifest_names() {
        for name in [
            "a.yaml",
            "b.yml",
            "c.json",
            "a.txt",
            "a",
            "a.yaml~",
            "kube-apiserver.manifest",
        ] {
            assert!(is_manifest_name(name), "{name}");
        }
        for name in ["..yaml", ".a.yaml", ".a.yaml.swp", ".", ""] {
            assert!(!is_manifest_name(name), "{name}");
        }
    }

    #[test]
    fn reads_manifests_in_name_order_and_skips_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "b.yaml", "b");
        write(dir.path(), "a.json", "a");
        write(dir.path(), ".hidden.yaml", "hidden");
        write(dir.path(), "notes.txt", "txt");
        fs::create_dir(dir.path().join("sub.yaml")).unwrap();
        fs::write(dir.path().join("c.yml"), "kind: [").unwrap();
        std::os::unix::fs::symlink(dir.path().join("b.yaml"), dir.path().join("d.yaml")).unwrap();
        let reads = summary(scan(dir.path(), "n"));
        let files: Vec<_> = reads.iter().map(|(file, _)| file.as_str()).collect();
        assert_eq!(files, ["a.json", "b.yaml", "c.yml", "d.yaml", "notes.txt"]);
        assert_eq!(reads[0].1, Ok(vec!["a-n".to_owned()]));
        assert!(reads[2].1.as_ref().unwrap_err().starts_with("couldn't parse as pod"));
        assert_eq!(reads[3].1, Ok(vec!["b-n".to_owned()]), "symlinks are followed");
        assert_eq!(reads[4].1, Ok(vec!["txt-n".to_owned()]), "any extension, as upstream");
    }

    #[test]
    fn a_file_path_reads_that_file() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "pod.manifest", "single");
        let reads = summary(scan(&dir.path().join("pod.manifest"), "n"));
        assert_eq!(reads, [("pod.manifest".to_owned(), Ok(vec!["single-n".to_owned()]))]);
    }

    #[test]
    fn missing_and_empty_paths() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(scan(&dir.path().join("nope"), "n"), ScanOutcome::Missing));
        assert!(summary(scan(dir.path(), "n")).is_empty());
    }

    #[test]
    fn oversized_and_binary_files_are_read_errors() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("big.yaml"), vec![b'#'; MAX_MANIFEST_BYTES + 1]).unwrap();
        fs::write(dir.path().join("bin.yaml"), [0xff, 0xfe]).unwrap();
        let ScanOutcome::Read(reads) = scan(dir.path(), "n") else {
            panic!()
        };
        for read in reads {
            assert!(
                matches!(read.result, Err(manifest::Error::Read { .. })),
                "{:?}",
                read.result
            );
        }
    }

    #[test]
    fn vanished_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_manifest(&dir.path().join("gone.yaml"), "n").is_none());
    }

    fn pods_of(outcome: ScanOutcome, cache: &ScanCache) -> Vec<Arc<k8s_openapi::api::core::v1::Pod>> {
        let reads = match outcome {
            ScanOutcome::Read(reads) => reads,
            ScanOutcome::Unchanged => cache.reads(),
            other => panic!("{other:?}"),
        };
        reads.into_iter().flat_map(|r| r.result.unwrap_or_default()).collect()
    }

    #[test]
    fn a_scan_is_unchanged_only_with_the_same_files_all_kept() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.yaml", "a");
        let mut cache = ScanCache::default();
        let scan = |cache: &mut ScanCache| {
            scan_cached(dir.path(), "n", cache);
            cache.last_scan_unchanged()
        };
        assert!(!scan(&mut cache), "the first scan is a change");
        assert!(scan(&mut cache));
        write(dir.path(), "b.yaml", "b");
        assert!(!scan(&mut cache), "a file added");
        assert!(scan(&mut cache));
        fs::remove_file(dir.path().join("a.yaml")).unwrap();
        assert!(!scan(&mut cache), "a file gone");
        fs::write(dir.path().join("bad.yaml"), [0xff, 0xfe, 0]).unwrap();
        assert!(!scan(&mut cache));
        assert!(!scan(&mut cache), "a read error is read again: never unchanged");
        fs::remove_file(dir.path().join("bad.yaml")).unwrap();
        scan(&mut cache);
        assert!(scan(&mut cache));
        fs::remove_dir_all(dir.path()).unwrap();
        assert!(!scan(&mut cache), "the path gone");
    }

    #[test]
    fn an_unchanged_file_is_not_read_again_a_changed_or_replaced_one_is() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.yaml", "a");
        write(dir.path(), "b.yaml", "b");
        let mut cache = ScanCache::default();
        let first = pods_of(scan_cached(dir.path(), "n", &mut cache), &cache);
        let second = pods_of(scan_cached(dir.path(), "n", &mut cache), &cache);
        assert_eq!(first.len(), 2);
        assert!(
            first.iter().zip(&second).all(|(x, y)| Arc::ptr_eq(x, y)),
            "same allocations"
        );
        // b edited in place (same size: the times differ), a replaced by a rename
        std::thread::sleep(std::time::Duration::from_millis(10));
        write(dir.path(), "b.yaml", "c");
        write(dir.path(), "new.tmp", "a");
        fs::rename(dir.path().join("new.tmp"), dir.path().join("a.yaml")).unwrap();
        let third = pods_of(scan_cached(dir.path(), "n", &mut cache), &cache);
        let names: Vec<_> = third.iter().map(|p| p.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, ["a-n", "c-n"]);
        assert!(!Arc::ptr_eq(&third[0], &second[0]), "a was read again after the rename");
        // gone: forgotten
        fs::remove_file(dir.path().join("b.yaml")).unwrap();
        assert_eq!(pods_of(scan_cached(dir.path(), "n", &mut cache), &cache).len(), 1);
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn parse_errors_are_kept_read_errors_tried_again() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("bad.yaml"), "kind: [").unwrap();
        fs::write(dir.path().join("bin.yaml"), [0xff, 0xfe]).unwrap();
        let mut cache = ScanCache::default();
        let summary = |o: ScanOutcome| match o {
            ScanOutcome::Read(reads) => reads.into_iter().map(|r| r.result.is_err()).collect::<Vec<_>>(),
            o => panic!("{o:?}"),
        };
        assert_eq!(summary(scan_cached(dir.path(), "n", &mut cache)), [true, true]);
        assert_eq!(cache.len(), 1, "only the parse error is kept");
        assert_eq!(summary(scan_cached(dir.path(), "n", &mut cache)), [true, true]);
        // the missing path forgets everything
        assert!(matches!(
            scan_cached(&dir.path().join("nope"), "n", &mut cache),
            ScanOutcome::Missing
        ));
        assert!(cache.is_empty());
    }
}
