//! Where image GC reads the image filesystem's usage: the runtime's
//! `ImageFsInfo` names the mountpoint, `statvfs` of it gives capacity and
//! availability (upstream's stats provider does the same through cAdvisor).
//! Tests inject a fixed capacity instead ([`FixedCapacity`]).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use super::error::GcError;
use super::images::FsUsage;
use crate::cri::Runtime;
use crate::cri::v1::ImageFsInfoRequest;

/// A source of image filesystem usage.
#[async_trait::async_trait]
pub trait ImageFsStats: Send + Sync + 'static {
    /// Capacity and availability of the filesystem holding the images.
    async fn usage(&self, runtime: &dyn Runtime) -> Result<FsUsage, GcError>;
}

/// The real source: `ImageFsInfo`'s first mountpoint, then `statvfs`.
#[derive(Clone, Copy, Debug, Default)]
pub struct CriStatfs;

#[async_trait::async_trait]
impl ImageFsStats for CriStatfs {
    async fn usage(&self, runtime: &dyn Runtime) -> Result<FsUsage, GcError> {
        let info = runtime
            .image_fs_info(ImageFsInfoRequest {})
            .await
            .map_err(|source| GcError::Cri {
                call: "ImageFsInfo",
                source,
            })?;
        let mountpoint = info
            .image_filesystems
            .first()
            .and_then(|f| f.fs_id.as_ref())
            .map(|id| PathBuf::from(&id.mountpoint))
            .filter(|p| !p.as_os_str().is_empty())
            .ok_or(GcError::NoImageFs)?;
        let path = mountpoint.clone();
        let st = tokio::task::spawn_blocking(move || nix::sys::statvfs::statvfs(&path))
            .await
            .map_err(|e| GcError::Statfs {
                path: mountpoint.clone(),
                reason: e.to_string(),
            })?
            .map_err(|e| GcError::Statfs {
                path: mountpoint.clone(),
                reason: e.to_string(),
            })?;
        let frag = u128::from(st.fragment_size());
        let bytes = |blocks: u128| u64::try_from(blocks * frag).unwrap_or(u64::MAX);
        Ok(FsUsage {
            capacity: bytes(u128::from(st.blocks())),
            available: bytes(u128::from(st.blocks_available())),
        })
    }
}

/// A filesystem of `capacity` bytes holding only what the runtime's
/// `ImageFsInfo` reports as used: usage follows the images the runtime
/// holds, so removing one frees its size (for tests on the mock runtime).
#[derive(Clone, Copy, Debug)]
pub struct FixedCapacity(pub u64);

#[async_trait::async_trait]
impl ImageFsStats for FixedCapacity {
    async fn usage(&self, runtime: &dyn Runtime) -> Result<FsUsage, GcError> {
        let info = runtime
            .image_fs_info(ImageFsInfoRequest {})
            .await
            .map_err(|source| GcError::Cri {
                call: "ImageFsInfo",
                source,
            })?;
        let used: u64 = info
            .image_filesystems
            .iter()
            .filter_map(|f| f.used_bytes.as_ref())
            .map(|u| u.value)
            .sum();
        Ok(FsUsage {
            capacity: self.0,
            available: self.0.saturating_sub(used),
        })
    }
}

/// The image filesystem source a kubelet uses (default [`CriStatfs`]).
#[derive(Clone)]
pub struct ImageFsSource(pub Arc<dyn ImageFsStats>);

impl Default for ImageFsSource {
    fn default() -> Self {
        Self(Arc::new(CriStatfs))
    }
}

impl fmt::Debug for ImageFsSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ImageFsSource")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cri::mock::{MockImage, MockRuntime};

    #[tokio::test]
    async fn fixed_capacity_follows_the_runtimes_images() {
        let mock = MockRuntime::builder()
            .without_default_images()
            .image(MockImage::new("a:1").size(300))
            .image(MockImage::new("b:1").size(200))
            .build();
        let u = FixedCapacity(1000).usage(&mock).await.unwrap();
        assert_eq!((u.capacity, u.available), (1000, 500));
    }

    #[tokio::test]
    async fn statfs_of_the_runtimes_mountpoint() {
        // the mock names containerd's default mountpoint, absent here: a clear error
        let mock = MockRuntime::new();
        match CriStatfs.usage(&mock).await {
            Ok(u) => assert!(u.capacity >= u.available),
            Err(e) => assert!(e.to_string().contains("io.containerd.snapshotter"), "{e}"),
        }
    }
}
