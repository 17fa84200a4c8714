//! A [`kube::Client`] whose connection can be replaced while every holder
//! keeps using it (upstream's `updateTransport` after a client certificate
//! rotation): requests go through a slot holding the current inner client;
//! [`ClientSlot::swap`] puts a new one there. New requests use the new
//! client (new connections, the new certificate); requests in flight, such
//! as a long watch, finish on the old one, whose connections close when the
//! last of them ends.

use std::sync::{Arc, RwLock};

use http::{Request, Response};
use kube::Client;
use kube::client::Body;

/// The replaceable inner client of a [`rotating`] client (cheap to clone).
#[derive(Clone)]
pub struct ClientSlot(Arc<RwLock<(Client, u64)>>);

impl std::fmt::Debug for ClientSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientSlot")
    }
}

impl ClientSlot {
    /// Replaces the inner client; later requests use `client`.
    pub fn swap(&self, client: Client) {
        let mut slot = self.0.write().unwrap_or_else(|e| e.into_inner());
        *slot = (client, slot.1 + 1);
    }

    /// How many times the inner client was replaced.
    pub fn swaps(&self) -> u64 {
        self.0.read().unwrap_or_else(|e| e.into_inner()).1
    }

    fn current(&self) -> Client {
        self.0.read().unwrap_or_else(|e| e.into_inner()).0.clone()
    }
}

/// A client sending every request through the slot's current client, and
/// the slot (same default namespace as `inner`).
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let first = kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
/// let (client, slot) = actlet::cluster::rotating_client::rotating(first);
/// let second = kube::Client::try_from(kube::Config::new("http://127.0.0.1:2".parse().unwrap())).unwrap();
/// slot.swap(second); // `client` and its clones now talk through `second`
/// assert_eq!(client.default_namespace(), "default");
/// # });
/// ```
pub fn rotating(inner: Client) -> (Client, ClientSlot) {
    let namespace = inner.default_namespace().to_string();
    let slot = ClientSlot(Arc::new(RwLock::new((inner, 0))));
    let service_slot = slot.clone();
    let service = tower::service_fn(move |req: Request<Body>| {
        let client = service_slot.current();
        async move { client.send(req).await.map(|r: Response<Body>| r) }
    });
    (Client::new(service, namespace), slot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// A client answering every request with `body`.
    fn answering(body: &'static str) -> Client {
        let service = tower::service_fn(move |_req: Request<Body>| async move {
            let mut response = Response::new(Body::from(body.as_bytes().to_vec()));
            response
                .headers_mut()
                .insert("content-type", http::HeaderValue::from_static("application/json"));
            Ok::<_, Infallible>(response)
        });
        Client::new(service, "default")
    }

    #[tokio::test]
    async fn requests_go_to_the_client_in_the_slot_now() {
        let (client, slot) = rotating(answering(r#"{"gitVersion": "v1"}"#));
        let holder = client.clone();
        assert_eq!(
            holder.apiserver_version().await.map(|v| v.git_version).ok().as_deref(),
            Some("v1")
        );
        slot.swap(answering(r#"{"gitVersion": "v2"}"#));
        assert_eq!(slot.swaps(), 1);
        assert_eq!(
            holder.apiserver_version().await.map(|v| v.git_version).ok().as_deref(),
            Some("v2"),
            "a clone made before the swap follows it"
        );
    }
}
