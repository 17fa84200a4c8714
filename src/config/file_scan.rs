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
//! [`FileSource`]: crate::config::FileSource

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use crate::config::last_good::ManifestRead;
use crate::config::manifest::{self, MAX_MANIFEST_BYTES};
use crate::config::static_pod::{ManifestOrigin, load_static_pods};

/// What one scan of the static pod path found.
#[derive(Debug)]
pub enum ScanOutcome {
    /// The path exists: one read per manifest, in name order.
    Read(Vec<ManifestRead>),
    /// The path does not exist.
    Missing,
    /// The path could not be listed; the reason.
    Failed(String),
}

/// Whether a directory entry named `name` is a manifest.
pub fn is_manifest_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.')
}

/// Scans `path` (a directory or a file) and loads every manifest for `node_name`.
pub fn scan(path: &Path, node_name: &str) -> ScanOutcome {
    let metadata = match fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return ScanOutcome::Missing,
        Err(e) => return ScanOutcome::Failed(e.to_string()),
    };
    if metadata.is_file() {
        return ScanOutcome::Read(read_manifest(path, node_name).into_iter().collect());
    }
    if !metadata.is_dir() {
        return ScanOutcome::Failed("path is not a directory or file".to_owned());
    }
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
    let reads = names
        .iter()
        .map(|name| path.join(name))
        .filter(|file| match fs::metadata(file) {
            Ok(metadata) if metadata.is_file() => true,
            Ok(_) => {
                tracing::debug!(file = %file.display(), "not a regular file, not recursing into it");
                false
            }
            Err(_) => false,
        })
        .filter_map(|file| read_manifest(&file, node_name))
        .collect();
    ScanOutcome::Read(reads)
}

/// Reads and loads one manifest file; `None` if it no longer exists.
pub fn read_manifest(file: &Path, node_name: &str) -> Option<ManifestRead> {
    let origin = file.display().to_string();
    let result = match read_capped(file) {
        Ok(body) => load_static_pods(&body, ManifestOrigin::File(&origin), node_name),
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
                    .map(|pods| pods.into_iter().map(|p| p.metadata.name.unwrap()).collect())
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
}
