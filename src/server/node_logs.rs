//! `/logs/`: the node's log files (`/var/log`), as upstream's file server
//! gives them: a directory is an HTML listing, a file its bytes. Paths are
//! percent-decoded and cleaned first; nothing outside the log directory is
//! reachable (`..` and symlinks out of it are refused).

use std::path::{Component, Path, PathBuf};

use hyper::StatusCode;

use super::secure::{Resp, bytes_response, text};

/// The file or directory `request_path` (below `/logs/`) names inside
/// `root`, or `None` when it would leave `root`.
pub fn resolve(root: &Path, request_path: &str) -> Option<PathBuf> {
    let decoded = percent_decode(request_path)?;
    let mut out = root.to_path_buf();
    for c in Path::new(&decoded).components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `GET /logs/{path}`.
pub async fn serve(root: &Path, request_path: &str) -> Resp {
    let Some(path) = resolve(root, request_path) else {
        return text(StatusCode::BAD_REQUEST, "invalid URL path");
    };
    // symlinks must not lead out of the log directory either
    let (Ok(real_root), Ok(real)) = (
        tokio::fs::canonicalize(root).await,
        tokio::fs::canonicalize(&path).await,
    ) else {
        return text(StatusCode::NOT_FOUND, "404 page not found");
    };
    if !real.starts_with(&real_root) {
        return text(StatusCode::NOT_FOUND, "404 page not found");
    }
    let Ok(meta) = tokio::fs::metadata(&real).await else {
        return text(StatusCode::NOT_FOUND, "404 page not found");
    };
    if meta.is_dir() {
        let Ok(mut dir) = tokio::fs::read_dir(&real).await else {
            return text(StatusCode::FORBIDDEN, "403 Forbidden");
        };
        let mut names = vec![];
        while let Ok(Some(entry)) = dir.next_entry().await {
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().await.is_ok_and(|t| t.is_dir()) {
                name.push('/');
            }
            names.push(name);
        }
        names.sort();
        let mut body = String::from("<pre>\n");
        for n in names {
            let n = html_escape(&n);
            body.push_str(&format!("<a href=\"{n}\">{n}</a>\n"));
        }
        body.push_str("</pre>\n");
        return bytes_response(StatusCode::OK, "text/html; charset=utf-8", body);
    }
    match tokio::fs::read(&real).await {
        Ok(data) => bytes_response(StatusCode::OK, "text/plain; charset=utf-8", data),
        Err(e) => text(StatusCode::FORBIDDEN, format!("cannot read: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traversal_is_refused() {
        let root = Path::new("/var/log");
        assert_eq!(resolve(root, "syslog"), Some(PathBuf::from("/var/log/syslog")));
        assert_eq!(
            resolve(root, "/pods/a/0.log"),
            Some(PathBuf::from("/var/log/pods/a/0.log"))
        );
        assert_eq!(resolve(root, ""), Some(PathBuf::from("/var/log")));
        assert_eq!(resolve(root, "../etc/shadow"), None);
        assert_eq!(resolve(root, "a/../../etc"), None);
        assert_eq!(resolve(root, "%2e%2e/etc/shadow"), None, "encoded dots are dots");
        assert_eq!(resolve(root, "bad%zz"), None);
    }

    #[tokio::test]
    async fn lists_directories_serves_files_and_not_symlinks_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("log");
        std::fs::create_dir_all(root.join("pods")).unwrap();
        std::fs::write(root.join("syslog"), "boot ok\n").unwrap();
        std::fs::write(dir.path().join("secret"), "no").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("escape")).unwrap();
        let body = |r: Resp| async move {
            use http_body_util::BodyExt;
            let status = r.status();
            (
                status,
                String::from_utf8(r.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap(),
            )
        };
        let (s, b) = body(serve(&root, "").await).await;
        assert_eq!(s, StatusCode::OK);
        assert!(
            b.contains("<a href=\"pods/\">pods/</a>") && b.contains("<a href=\"syslog\">syslog</a>"),
            "{b}"
        );
        assert_eq!(
            body(serve(&root, "syslog").await).await,
            (StatusCode::OK, "boot ok\n".into())
        );
        assert_eq!(body(serve(&root, "escape").await).await.0, StatusCode::NOT_FOUND);
        assert_eq!(body(serve(&root, "../secret").await).await.0, StatusCode::BAD_REQUEST);
        assert_eq!(body(serve(&root, "missing").await).await.0, StatusCode::NOT_FOUND);
    }
}
