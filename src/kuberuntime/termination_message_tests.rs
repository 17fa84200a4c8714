use super::*;

fn exited(code: i32, mount: Option<&v1::Mount>, log: &Path) -> v1::ContainerStatus {
    v1::ContainerStatus {
        exit_code: code,
        mounts: mount.into_iter().cloned().collect(),
        log_path: log.to_string_lossy().into_owned(),
        ..Default::default()
    }
}

fn log_line(i: usize) -> String {
    format!("2024-01-01T00:00:00Z stdout F line {i}\n")
}

#[tokio::test]
async fn the_file_is_created_world_writable_and_mounted_read_write() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = container_dir(tmp.path(), "u1", "app");
    let m = create_mount_blocking(&dir, "/tmp/msg").unwrap();
    assert_eq!(m.container_path, "/tmp/msg");
    assert!(!m.readonly);
    let host = Path::new(&m.host_path);
    assert_eq!(host.parent().unwrap(), tmp.path().join("u1/containers/app"));
    let meta = std::fs::metadata(host).unwrap();
    assert_eq!((meta.len(), meta.permissions().mode() & 0o777), (0, 0o666));
    let again = create_mount_blocking(&dir, "/tmp/msg").unwrap();
    assert_ne!(again.host_path, m.host_path, "a fresh file per start");
}

#[tokio::test]
async fn the_message_is_the_files_last_4096_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let m = create_mount_blocking(tmp.path(), "/dev/termination-log").unwrap();
    std::fs::write(&m.host_path, "done").unwrap();
    let s = exited(0, Some(&m), &tmp.path().join("none.log"));
    assert_eq!(read_message(&s, "/dev/termination-log", "File").await, "done");
    let long = format!("{}{}", "a".repeat(100), "b".repeat(4096));
    std::fs::write(&m.host_path, &long).unwrap();
    assert_eq!(read_message(&s, "/dev/termination-log", "File").await, "b".repeat(4096));
    // Another path than the mount's: no message.
    assert_eq!(read_message(&s, "/other", "File").await, "");
}

#[tokio::test]
async fn fallback_to_logs_only_on_error_with_an_empty_file() {
    let tmp = tempfile::tempdir().unwrap();
    let m = create_mount_blocking(tmp.path(), "/dev/termination-log").unwrap();
    let log = tmp.path().join("0.log");
    std::fs::write(&log, (0..100).map(log_line).collect::<String>()).unwrap();
    let p = "/dev/termination-log";
    let failed = exited(1, Some(&m), &log);
    let from_log = read_message(&failed, p, FALLBACK_TO_LOGS_ON_ERROR).await;
    assert!(
        from_log.starts_with("line 20\n") && from_log.ends_with("line 99\n"),
        "{from_log}"
    );
    assert_eq!(from_log.lines().count(), MAX_LOG_LINES);
    assert_eq!(
        read_message(&failed, p, "File").await,
        "",
        "policy File never reads the log"
    );
    assert_eq!(
        read_message(&exited(0, Some(&m), &log), p, FALLBACK_TO_LOGS_ON_ERROR).await,
        ""
    );
    std::fs::write(&m.host_path, "from file").unwrap();
    assert_eq!(read_message(&failed, p, FALLBACK_TO_LOGS_ON_ERROR).await, "from file");
}

#[test]
fn the_log_message_keeps_the_last_2048_bytes() {
    let big = format!("2024-01-01T00:00:00Z stdout F {}\n", "x".repeat(5000));
    let tail = format!("2024-01-01T00:00:01Z stdout F {}\n", "end");
    let msg = message_from_log(format!("{big}{tail}").as_bytes());
    assert_eq!(msg.len(), MAX_LOG_BYTES);
    assert!(msg.ends_with("xxx\nend\n"));
}
