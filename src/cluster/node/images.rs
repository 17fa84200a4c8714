//! `status.images`: the images on the node, as upstream's `Images` setter
//! reports them (largest first, at most `nodeStatusMaxImages` = 50, each with
//! at most 5 names: digests, then tags).

use k8s_openapi::api::core::v1::ContainerImage;

use crate::cri::SharedRuntime;
use crate::cri::v1::{Image, ListImagesRequest};

/// Upstream's default `nodeStatusMaxImages`.
pub const NODE_STATUS_MAX_IMAGES: usize = 50;

/// Upstream's `MaxNamesPerImageInNodeStatus`.
pub const MAX_NAMES_PER_IMAGE: usize = 5;

/// The node's images from a CRI image list.
pub fn node_images(images: &[Image], max: usize) -> Vec<ContainerImage> {
    let mut sorted: Vec<&Image> = images.iter().collect();
    sorted.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.id.cmp(&b.id)));
    sorted
        .into_iter()
        .take(max)
        .map(|i| ContainerImage {
            names: Some(
                i.repo_digests
                    .iter()
                    .chain(&i.repo_tags)
                    .take(MAX_NAMES_PER_IMAGE)
                    .cloned()
                    .collect(),
            ),
            size_bytes: i64::try_from(i.size).ok(),
        })
        .collect()
}

/// Lists the runtime's images; `None` (keep what the Node has) when the
/// runtime does not answer.
pub async fn list_node_images(runtime: &SharedRuntime) -> Option<Vec<ContainerImage>> {
    match runtime.list_images(ListImagesRequest { filter: None }).await {
        Ok(r) => Some(node_images(&r.images, NODE_STATUS_MAX_IMAGES)),
        Err(e) => {
            tracing::debug!(error = %e, "cannot list images for the node status");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(id: &str, size: u64, tags: &[&str], digests: &[&str]) -> Image {
        Image {
            id: id.into(),
            size,
            repo_tags: tags.iter().map(|s| s.to_string()).collect(),
            repo_digests: digests.iter().map(|s| s.to_string()).collect(),
            ..Image::default()
        }
    }

    #[test]
    fn largest_first_capped_with_digests_then_tags() {
        let images = [
            image("sha256:a", 10, &["busybox:1.36"], &["busybox@sha256:aa"]),
            image("sha256:b", 300, &["pause:3.9"], &[]),
            image("sha256:c", 20, &["t1", "t2", "t3", "t4", "t5"], &["d1"]),
        ];
        let out = node_images(&images, 2);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].names.as_deref(), Some(&["pause:3.9".to_string()][..]));
        assert_eq!(out[0].size_bytes, Some(300));
        let names = out[1].names.clone().unwrap_or_default();
        assert_eq!(
            names,
            ["d1", "t1", "t2", "t3", "t4"],
            "digests first, five names at most"
        );
    }
}
