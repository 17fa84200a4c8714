//! The mock's image store, its fake registry, and image name normalization.
//!
//! Names are normalized the way containerd (docker's reference library) does:
//! `busybox` → `docker.io/library/busybox:latest`, `busybox:1.36` →
//! `docker.io/library/busybox:1.36`, `foo/bar` → `docker.io/foo/bar:latest`,
//! `registry.k8s.io/pause:3.9` unchanged, `name@sha256:<hex>` keeps its digest.
//! Upper-case repositories are invalid. An image can also be named by its id
//! (`sha256:<hex>`, the bare hex, or a unique hex prefix), as on containerd.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use crate::cri::v1;

/// Normalizes an image reference like containerd; `None` if it is invalid.
///
/// ```
/// use actlet::cri::mock::normalize_image_name;
/// assert_eq!(normalize_image_name("busybox").as_deref(), Some("docker.io/library/busybox:latest"));
/// assert_eq!(normalize_image_name("foo/bar:1").as_deref(), Some("docker.io/foo/bar:1"));
/// assert_eq!(normalize_image_name("registry.k8s.io/pause:3.9").as_deref(), Some("registry.k8s.io/pause:3.9"));
/// assert_eq!(normalize_image_name("Busybox"), None); // upper case is invalid
/// ```
pub fn normalize_image_name(name: &str) -> Option<String> {
    let (rest, digest) = match name.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (name, None),
    };
    if let Some(d) = digest {
        let hex = d.strip_prefix("sha256:")?;
        if hex.len() != 64 || !is_lower_hex(hex) {
            return None;
        }
    }
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (repo, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    let (domain, path) = match repo.split_once('/') {
        Some((d, p)) if d.contains(['.', ':']) || d == "localhost" => (d, p.to_string()),
        _ => ("docker.io", repo.to_string()),
    };
    let domain = if domain == "index.docker.io" {
        "docker.io"
    } else {
        domain
    };
    let path = if domain == "docker.io" && !path.contains('/') {
        format!("library/{path}")
    } else {
        path
    };
    let path_ok = !path.is_empty()
        && path.split('/').all(|c| {
            !c.is_empty()
                && c.chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || "._-".contains(ch))
        });
    let tag_ok = tag.is_none_or(|t| {
        !t.is_empty() && t.len() <= 128 && t.chars().all(|ch| ch.is_ascii_alphanumeric() || "._-".contains(ch))
    });
    if !path_ok || !tag_ok || domain.is_empty() {
        return None;
    }
    let mut out = format!("{domain}/{path}");
    match (tag, digest) {
        (Some(t), _) => out.push_str(&format!(":{t}")),
        (None, None) => out.push_str(":latest"),
        (None, Some(_)) => {}
    }
    if let Some(d) = digest {
        out.push_str(&format!("@{d}"));
    }
    Some(out)
}

fn is_lower_hex(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
}

/// A deterministic fake `sha256:` digest derived from `seed`.
pub(crate) fn fake_digest(seed: &str) -> String {
    let mut out = String::from("sha256:");
    for i in 0u8..4 {
        let mut h = DefaultHasher::new();
        (seed, i).hash(&mut h);
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out
}

/// An image the mock can hold in its store or serve from its fake registry.
///
/// ```
/// use actlet::cri::mock::{MockImage, MockRuntime};
/// let app = MockImage::new("example.com/app:v1")
///     .tag("example.com/app:latest")
///     .uid(1000)
///     .entrypoint(["/app"])
///     .cmd(["--port", "8080"]);
/// let mock = MockRuntime::builder().image(app.clone()).build();
/// assert_eq!(app.repo_tags(), ["example.com/app:latest", "example.com/app:v1"]);
/// # let _ = mock;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockImage {
    id: String,
    repo_tags: Vec<String>,
    repo_digests: Vec<String>,
    size: u64,
    uid: Option<i64>,
    username: String,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    busybox: bool,
}

impl MockImage {
    /// An image tagged `name` (normalized) with an id derived from the name,
    /// 1 MiB, running as root, with no entrypoint or cmd.
    ///
    /// # Panics
    /// If `name` is not a valid image reference.
    ///
    /// ```
    /// use actlet::cri::mock::MockImage;
    /// let image = MockImage::new("nginx:1.25");
    /// assert_eq!(image.repo_tags(), ["docker.io/library/nginx:1.25"]);
    /// assert_eq!(image.id(), MockImage::new("docker.io/library/nginx:1.25").id()); // derived from the name
    /// assert!(image.entrypoint_argv().is_empty() && !image.is_busybox());
    /// ```
    pub fn new(name: &str) -> Self {
        let tag = normalize_image_name(name).unwrap_or_else(|| panic!("invalid image name {name:?}"));
        Self {
            id: fake_digest(&tag),
            repo_tags: vec![tag],
            repo_digests: Vec::new(),
            size: 1 << 20,
            uid: None,
            username: String::new(),
            entrypoint: Vec::new(),
            cmd: Vec::new(),
            busybox: false,
        }
    }

    /// `docker.io/library/busybox:1.36` also tagged `:latest`, cmd `sh`,
    /// busybox-like (see [`MockImage::busybox_like`]).
    ///
    /// ```
    /// use actlet::cri::mock::MockImage;
    /// let image = MockImage::busybox();
    /// assert!(image.repo_tags().contains(&"docker.io/library/busybox:latest".to_string()));
    /// assert_eq!(image.cmd_argv(), ["sh"]);
    /// assert!(image.is_busybox());
    /// ```
    pub fn busybox() -> Self {
        Self::new("docker.io/library/busybox:1.36")
            .tag("docker.io/library/busybox:latest")
            .size(2_131_838)
            .cmd(["sh"])
            .busybox_like()
    }

    /// `registry.k8s.io/pause:3.9`, user 65535, entrypoint `/pause`.
    ///
    /// ```
    /// use actlet::cri::mock::{DEFAULT_SANDBOX_IMAGE, MockImage};
    /// let image = MockImage::pause();
    /// assert_eq!(image.repo_tags(), [DEFAULT_SANDBOX_IMAGE]);
    /// assert_eq!(image.to_cri().uid.map(|u| u.value), Some(65535));
    /// ```
    pub fn pause() -> Self {
        Self::new("registry.k8s.io/pause:3.9")
            .size(690_001)
            .uid(65535)
            .entrypoint(["/pause"])
    }

    /// Adds another tag to the same image.
    ///
    /// ```
    /// use actlet::cri::mock::MockImage;
    /// let image = MockImage::new("app:v1").tag("app:stable").tag("app:v1"); // duplicates are ignored
    /// assert_eq!(image.repo_tags(), ["docker.io/library/app:stable", "docker.io/library/app:v1"]);
    /// ```
    pub fn tag(mut self, name: &str) -> Self {
        let tag = normalize_image_name(name).unwrap_or_else(|| panic!("invalid image name {name:?}"));
        if !self.repo_tags.contains(&tag) {
            self.repo_tags.push(tag);
            self.repo_tags.sort();
        }
        self
    }

    /// Sets the size in bytes.
    ///
    /// ```
    /// let image = actlet::cri::mock::MockImage::new("app:v1").size(42 << 20);
    /// assert_eq!(image.to_cri().size, 42 << 20); // as ListImages / ImageStatus report it
    /// ```
    pub fn size(mut self, bytes: u64) -> Self {
        self.size = bytes;
        self
    }

    /// Sets the numeric user the image runs as.
    ///
    /// ```
    /// let image = actlet::cri::mock::MockImage::new("app:v1").uid(1000);
    /// assert_eq!(image.to_cri().uid.unwrap().value, 1000);
    /// ```
    pub fn uid(mut self, uid: i64) -> Self {
        self.uid = Some(uid);
        self
    }

    /// Sets the image entrypoint (replaced by a container's `command`).
    ///
    /// ```
    /// let image = actlet::cri::mock::MockImage::new("app:v1").entrypoint(["/bin/app", "serve"]);
    /// assert_eq!(image.entrypoint_argv(), ["/bin/app", "serve"]);
    /// ```
    pub fn entrypoint<S: Into<String>>(mut self, argv: impl IntoIterator<Item = S>) -> Self {
        self.entrypoint = argv.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the image cmd (replaced by a container's `args`, dropped when it
    /// gives a `command`).
    ///
    /// ```
    /// let image = actlet::cri::mock::MockImage::new("app:v1").cmd(["--verbose"]);
    /// assert_eq!(image.cmd_argv(), ["--verbose"]);
    /// ```
    pub fn cmd<S: Into<String>>(mut self, argv: impl IntoIterator<Item = S>) -> Self {
        self.cmd = argv.into_iter().map(Into::into).collect();
        self
    }

    /// Marks the image as busybox-like: its programs are the busybox applets,
    /// so a container command naming another program fails to start, as
    /// runc's "executable file not found" (see the busybox subset in the
    /// module docs).
    ///
    /// ```
    /// use actlet::cri::mock::MockImage;
    /// assert!(MockImage::new("example.com/toolbox:1").busybox_like().is_busybox());
    /// assert!(!MockImage::new("example.com/toolbox:1").is_busybox());
    /// ```
    pub fn busybox_like(mut self) -> Self {
        self.busybox = true;
        self
    }

    /// Whether the image is busybox-like.
    ///
    /// ```
    /// use actlet::cri::mock::MockImage;
    /// assert!(MockImage::busybox().is_busybox());
    /// assert!(!MockImage::pause().is_busybox());
    /// ```
    pub fn is_busybox(&self) -> bool {
        self.busybox
    }

    /// The image id, `sha256:<64 hex>`.
    ///
    /// ```
    /// let image = actlet::cri::mock::MockImage::new("app:v1");
    /// assert!(image.id().starts_with("sha256:") && image.id().len() == 7 + 64);
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The normalized tags.
    ///
    /// ```
    /// let image = actlet::cri::mock::MockImage::new("quay.io/org/app");
    /// assert_eq!(image.repo_tags(), ["quay.io/org/app:latest"]);
    /// ```
    pub fn repo_tags(&self) -> &[String] {
        &self.repo_tags
    }

    /// The image entrypoint.
    ///
    /// ```
    /// assert_eq!(actlet::cri::mock::MockImage::pause().entrypoint_argv(), ["/pause"]);
    /// ```
    pub fn entrypoint_argv(&self) -> &[String] {
        &self.entrypoint
    }

    /// The image cmd.
    ///
    /// ```
    /// assert_eq!(actlet::cri::mock::MockImage::busybox().cmd_argv(), ["sh"]);
    /// ```
    pub fn cmd_argv(&self) -> &[String] {
        &self.cmd
    }

    /// The CRI view of the image.
    ///
    /// ```
    /// use actlet::cri::mock::MockImage;
    /// let image = MockImage::new("app:v1").size(1024);
    /// let cri = image.to_cri();
    /// assert_eq!((cri.id.as_str(), cri.size), (image.id(), 1024));
    /// assert_eq!(cri.repo_tags, image.repo_tags());
    /// ```
    pub fn to_cri(&self) -> v1::Image {
        v1::Image {
            id: self.id.clone(),
            repo_tags: self.repo_tags.clone(),
            repo_digests: self.repo_digests.clone(),
            size: self.size,
            uid: self.uid.map(|value| v1::Int64Value { value }),
            username: self.username.clone(),
            spec: None,
            pinned: false,
        }
    }

    /// The reference containerd reports as a container's `image_ref`: the
    /// first repo digest, else the id.
    pub(crate) fn image_ref(&self) -> String {
        self.repo_digests.first().cloned().unwrap_or_else(|| self.id.clone())
    }

    fn matches(&self, normalized: &str) -> bool {
        self.repo_tags.iter().any(|t| t == normalized) || self.repo_digests.iter().any(|d| d == normalized)
    }
}

/// The images present "on the node".
#[derive(Debug, Default)]
pub(crate) struct ImageStore {
    images: Vec<MockImage>,
}

impl ImageStore {
    /// Finds an image by reference or id, as containerd's ImageStatus does.
    pub(crate) fn resolve(&self, name: &str) -> Option<&MockImage> {
        if let Some(img) = normalize_image_name(name).and_then(|n| self.images.iter().find(|i| i.matches(&n))) {
            return Some(img);
        }
        let hex = name.strip_prefix("sha256:").unwrap_or(name);
        if hex.is_empty() || !is_lower_hex(hex) {
            return None;
        }
        let mut hits = self.images.iter().filter(|i| i.id[7..].starts_with(hex));
        match (hits.next(), hits.next()) {
            (Some(img), None) => Some(img),
            _ => None,
        }
    }

    /// Finds an image by id.
    pub(crate) fn by_id(&self, id: &str) -> Option<&MockImage> {
        self.images.iter().find(|i| i.id == id)
    }

    /// Adds an image; its tags move away from any other image that had them.
    pub(crate) fn add(&mut self, img: MockImage) {
        for other in &mut self.images {
            other.repo_tags.retain(|t| !img.repo_tags.contains(t));
        }
        if let Some(existing) = self.images.iter_mut().find(|i| i.id == img.id) {
            for t in img.repo_tags {
                if !existing.repo_tags.contains(&t) {
                    existing.repo_tags.push(t);
                }
            }
            existing.repo_tags.sort();
            for d in img.repo_digests {
                if !existing.repo_digests.contains(&d) {
                    existing.repo_digests.push(d);
                }
            }
        } else {
            self.images.push(img);
        }
        self.images
            .retain(|i| !i.repo_tags.is_empty() || !i.repo_digests.is_empty());
    }

    /// Removes the whole image `name` resolves to (every tag, as containerd
    /// does); `false` when there was none.
    pub(crate) fn remove(&mut self, name: &str) -> bool {
        let Some(id) = self.resolve(name).map(|i| i.id.clone()) else {
            return false;
        };
        self.images.retain(|i| i.id != id);
        true
    }

    /// Every image, sorted by id.
    pub(crate) fn list(&self) -> Vec<&MockImage> {
        let mut all: Vec<_> = self.images.iter().collect();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        all
    }

    /// Total size of all images.
    pub(crate) fn total_size(&self) -> u64 {
        self.images.iter().map(|i| i.size).sum()
    }
}

/// Images `PullImage` can fetch, keyed by normalized name, with a pull latency.
#[derive(Debug, Default)]
pub(crate) struct FakeRegistry {
    entries: HashMap<String, (MockImage, Duration)>,
}

impl FakeRegistry {
    /// Makes `img` pullable under each of its tags; the pulled image gets a
    /// repo digest, like an image pulled from a real registry.
    pub(crate) fn publish(&mut self, img: MockImage, latency: Duration) {
        let mut img = img;
        for tag in img.repo_tags.clone() {
            let repo = tag.rsplit_once(':').map_or(tag.as_str(), |(r, _)| r).to_string();
            let digest = format!("{repo}@{}", fake_digest(&format!("manifest:{tag}")));
            if !img.repo_digests.contains(&digest) {
                img.repo_digests.push(digest);
            }
        }
        for tag in img.repo_tags.clone() {
            self.entries.insert(tag, (img.clone(), latency));
        }
    }

    /// The image published under `normalized` and its latency.
    pub(crate) fn get(&self, normalized: &str) -> Option<(MockImage, Duration)> {
        if let Some(found) = self.entries.get(normalized) {
            return Some(found.clone());
        }
        self.entries
            .values()
            .find(|(img, _)| img.repo_digests.iter().any(|d| d == normalized))
            .cloned()
    }
}

/// containerd's error for a pull with no registry reachable (DNS fails).
pub(crate) fn pull_failure_message(normalized: &str) -> String {
    let (domain, rest) = normalized.split_once('/').unwrap_or(("docker.io", normalized));
    let host = if domain == "docker.io" {
        "registry-1.docker.io"
    } else {
        domain
    };
    let (repo, reference) = match rest.split_once('@') {
        Some((r, d)) => (r.rsplit_once(':').map_or(r, |(r, _)| r), d),
        None => rest.rsplit_once(':').unwrap_or((rest, "latest")),
    };
    format!(
        "failed to pull and unpack image \"{normalized}\": failed to resolve reference \"{normalized}\": \
         failed to do request: Head \"https://{host}/v2/{repo}/manifests/{reference}\": \
         dial tcp: lookup {host}: no such host"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_like_containerd() {
        let n = normalize_image_name;
        assert_eq!(n("busybox").as_deref(), Some("docker.io/library/busybox:latest"));
        assert_eq!(n("busybox:1.36").as_deref(), Some("docker.io/library/busybox:1.36"));
        assert_eq!(
            n("library/busybox").as_deref(),
            Some("docker.io/library/busybox:latest")
        );
        assert_eq!(n("foo/bar").as_deref(), Some("docker.io/foo/bar:latest"));
        assert_eq!(
            n("registry.k8s.io/pause:3.9").as_deref(),
            Some("registry.k8s.io/pause:3.9")
        );
        assert_eq!(n("localhost:5000/x").as_deref(), Some("localhost:5000/x:latest"));
        let d = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            n(&format!("busybox@{d}")),
            Some(format!("docker.io/library/busybox@{d}"))
        );
        assert_eq!(n("BusyBox"), None);
        assert_eq!(n("busybox@sha256:abc"), None);
    }

    #[test]
    fn resolves_by_tag_id_and_unique_prefix() {
        let mut store = ImageStore::default();
        store.add(MockImage::busybox());
        store.add(MockImage::pause());
        let id = MockImage::busybox().id().to_string();
        assert_eq!(store.resolve("busybox").unwrap().id(), id);
        assert_eq!(store.resolve(&id).unwrap().id(), id);
        assert_eq!(store.resolve(&id[7..19]).unwrap().id(), id);
        assert!(store.resolve("nope:1").is_none());
        assert!(store.remove("busybox:latest"));
        assert!(
            store.resolve("busybox:1.36").is_none(),
            "remove drops every tag of the image"
        );
    }

    #[test]
    fn pull_message_names_the_registry_host() {
        let m = pull_failure_message("docker.io/nope/nope:1");
        assert!(
            m.contains("https://registry-1.docker.io/v2/nope/nope/manifests/1"),
            "{m}"
        );
        assert!(
            m.starts_with("failed to pull and unpack image \"docker.io/nope/nope:1\""),
            "{m}"
        );
    }
}
