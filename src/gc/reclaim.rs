//! [`GcReclaim`]: node-level reclaim for the eviction manager. Before it
//! evicts a pod for a disk signal, upstream's manager runs the container GC
//! (`DeleteAllUnusedContainers`) and deletes every unused image
//! (`DeleteUnusedImages`), then looks again; this is that, on the GC's own
//! deps and round locks (a round already running is not doubled).

use super::container_actor::{ContainerGcDeps, round};
use super::image_actor::{ImageGcDeps, delete_unused_images};

/// The GC as the eviction manager's node-level reclaim.
#[derive(Clone)]
pub struct GcReclaim {
    /// The container GC's deps.
    pub container: ContainerGcDeps,
    /// The image GC's deps (`None`: image GC disabled).
    pub image: Option<ImageGcDeps>,
}

#[async_trait::async_trait]
impl crate::eviction::NodeReclaim for GcReclaim {
    async fn reclaim(&self) -> Result<String, String> {
        let mut done = vec![];
        let mut errors = vec![];
        match self.container.state.try_container_round() {
            Some(guard) => match round(&self.container, guard).await {
                Ok(Some(r)) => done.push(format!(
                    "{} containers, {} sandboxes, {} log dirs removed",
                    r.containers, r.sandboxes, r.log_dirs
                )),
                Ok(None) => done.push("container GC waits for the pod sources".to_string()),
                Err(e) => errors.push(format!("container GC: {e}")),
            },
            None => done.push("a container GC round is already running".to_string()),
        }
        if let Some(image) = &self.image {
            match image.state.try_image_round() {
                Some(guard) => match delete_unused_images(image, guard).await {
                    Ok(freed) => done.push(format!("{freed} bytes of unused images freed")),
                    Err(e) => errors.push(format!("image GC: {e}")),
                },
                None => done.push("an image GC round is already running".to_string()),
            }
        }
        if errors.is_empty() {
            Ok(done.join("; "))
        } else {
            Err(errors.join("; "))
        }
    }
}
