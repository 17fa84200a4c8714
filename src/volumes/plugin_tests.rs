use std::os::unix::net::UnixListener;

use super::*;

fn src(path: &Path, t: &str) -> HostPathVolumeSource {
    HostPathVolumeSource {
        path: path.to_string_lossy().into_owned(),
        type_: (!t.is_empty()).then(|| t.to_string()),
    }
}

#[test]
fn host_path_types_are_checked_like_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("file");
    fs::write(&file, "x").unwrap();
    let sock = d.join("sock");
    let _listener = UnixListener::bind(&sock).unwrap();
    let missing = d.join("missing");

    assert!(check_host_path(&src(d, "Directory")).is_ok());
    assert!(check_host_path(&src(&file, "File")).is_ok());
    assert!(check_host_path(&src(&sock, "Socket")).is_ok());
    assert!(check_host_path(&src(Path::new("/dev/null"), "CharDevice")).is_ok());
    assert!(check_host_path(&src(&missing, "")).is_ok(), "no type: no check");

    let err = |p: &Path, t: &str| check_host_path(&src(p, t)).unwrap_err();
    assert_eq!(
        err(&file, "Directory"),
        format!("hostPath type check failed: {} is not a directory", file.display())
    );
    assert_eq!(
        err(d, "File"),
        format!("hostPath type check failed: {} is not a file", d.display())
    );
    assert!(err(&missing, "File").ends_with("is not a file"));
    assert!(err(&file, "Socket").ends_with("is not a socket file"));
    assert!(err(&file, "CharDevice").ends_with("is not a character device"));
    assert!(err(Path::new("/dev/null"), "BlockDevice").ends_with("is not a block device"));
    assert_eq!(err(d, "Weird"), "Weird is an invalid volume type");
    assert!(err(Path::new("relative/x"), "").contains("absolute"));
    assert!(err(Path::new("/a/../etc"), "").contains("'..'"));
    assert!(!missing.exists(), "checks create nothing");
}

#[test]
fn or_create_types_create_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let newdir = dir.path().join("a/b");
    check_host_path(&src(&newdir, "DirectoryOrCreate")).unwrap();
    assert!(newdir.is_dir());
    let newfile = dir.path().join("c/d.txt");
    check_host_path(&src(&newfile, "FileOrCreate")).unwrap();
    assert!(newfile.is_file());
    assert_eq!(fs::metadata(&newfile).unwrap().permissions().mode() & 0o777, 0o644);
    // An existing entry of the wrong kind is still refused.
    assert!(check_host_path(&src(&newfile, "DirectoryOrCreate")).is_err());
    assert!(check_host_path(&src(&newdir, "FileOrCreate")).is_err());
}

#[test]
fn empty_dirs_are_world_writable_and_tear_down_removes_them() {
    let dir = tempfile::tempdir().unwrap();
    let vol = dir.path().join("pods/u/volumes/kubernetes.io~empty-dir/cache");
    make_empty_dir(&vol).unwrap();
    assert_eq!(fs::metadata(&vol).unwrap().permissions().mode() & 0o777, 0o777);
    fs::write(vol.join("data"), "x").unwrap();
    tear_down_dir(&dir.path().join("pods/u")).unwrap();
    assert!(!dir.path().join("pods/u").exists());
    tear_down_dir(&dir.path().join("pods/u")).unwrap(); // idempotent
}

#[test]
fn memory_empty_dirs_are_size_limited_tmpfs_when_root() {
    if !can_mount() {
        eprintln!("SKIPPED: not root, cannot mount tmpfs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let vol = dir.path().join("mem");
    mount_tmpfs(&vol, 8 << 20).unwrap();
    mount_tmpfs(&vol, 8 << 20).unwrap(); // already mounted: nothing to do
    assert_eq!(mounts_under(dir.path()), vec![vol.clone()]);
    let st = nix::sys::statvfs::statvfs(&vol).unwrap();
    assert_eq!(st.blocks() as u64 * st.fragment_size() as u64, 8 << 20);
    fs::write(vol.join("f"), "x").unwrap();
    tear_down_dir(&vol).unwrap();
    assert!(mounts_under(dir.path()).is_empty());
    assert!(!vol.exists());
}

#[test]
fn plugin_dirs_round_trip() {
    for p in [
        Plugin::EmptyDir,
        Plugin::ConfigMap,
        Plugin::Secret,
        Plugin::Projected,
        Plugin::DownwardApi,
    ] {
        assert_eq!(Plugin::from_dir_name(p.dir_name().unwrap()), Some(p));
    }
    assert_eq!(Plugin::HostPath.dir_name(), None);
    assert!(Plugin::Secret.is_api_data() && !Plugin::EmptyDir.is_api_data());
}

#[test]
fn fs_group_ownership_changes_groups_and_modes_but_not_through_symlinks() {
    use std::os::unix::fs::MetadataExt;
    if !can_mount() {
        eprintln!("SKIPPED: not root, cannot chown");
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("target");
    fs::write(&target, "x").unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let vol = dir.path().join("vol");
    fs::create_dir_all(vol.join("sub")).unwrap();
    fs::write(vol.join("sub/f"), "y").unwrap();
    fs::set_permissions(vol.join("sub/f"), fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&target, vol.join("link")).unwrap();
    set_volume_ownership(&vol, 4321, false, false).unwrap();
    let meta = |p: &Path| fs::symlink_metadata(p).unwrap();
    assert_eq!(meta(&vol.join("sub/f")).gid(), 4321);
    assert_eq!(meta(&vol.join("sub/f")).mode() & 0o7777, 0o660);
    assert_eq!(meta(&vol.join("sub")).mode() & 0o2000, 0o2000, "setgid directories");
    assert_eq!(meta(&vol.join("link")).gid(), 4321, "the symlink itself");
    assert_eq!(meta(&target).gid(), 0, "never its target");
    assert_eq!(meta(&target).mode() & 0o777, 0o600);
    // OnRootMismatch: the root already matches, nothing below is touched.
    fs::set_permissions(vol.join("sub/f"), fs::Permissions::from_mode(0o600)).unwrap();
    set_volume_ownership(&vol, 4321, false, true).unwrap();
    assert_eq!(meta(&vol.join("sub/f")).mode() & 0o7777, 0o600);
}
