//! [`RuntimeClassWatch`]: the cluster's RuntimeClasses, listed and watched
//! into the shared [`RuntimeClasses`] table (upstream's RuntimeClass
//! informer). The table is the state: a restarted actor lists again and
//! replaces it whole; lookups meanwhile keep answering from the old table.

use std::collections::HashMap;

use actix::prelude::*;
use futures::StreamExt;
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};

use super::RuntimeClasses;

fn name_and_handler(rc: &RuntimeClass) -> Option<(String, String)> {
    Some((rc.metadata.name.clone()?, rc.handler.clone()))
}

/// One watcher event (or error) for the actor.
#[derive(Message)]
#[rtype(result = "()")]
struct Watched(Result<Event<RuntimeClass>, watcher::Error>);

/// The `runtime-classes` actor: lists and watches every RuntimeClass into
/// the shared [`RuntimeClasses`] (a restarted one lists again and replaces
/// the table whole; lookups keep answering from the old one meanwhile).
pub struct RuntimeClassWatch {
    client: kube::Client,
    classes: RuntimeClasses,
    listing: HashMap<String, String>,
}

impl RuntimeClassWatch {
    /// Watches every RuntimeClass through `client` into `classes`.
    pub fn new(client: kube::Client, classes: RuntimeClasses) -> Self {
        Self {
            client,
            classes,
            listing: HashMap::new(),
        }
    }
}

impl Actor for RuntimeClassWatch {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let api: Api<RuntimeClass> = Api::all(self.client.clone());
        // The watcher retries with client-go's backoff; every list replaces
        // the table.
        let stream = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .map(Watched);
        ctx.add_stream(stream);
    }
}

impl StreamHandler<Watched> for RuntimeClassWatch {
    fn handle(&mut self, Watched(event): Watched, _ctx: &mut Self::Context) {
        match event {
            Ok(Event::Init) => self.listing.clear(),
            Ok(Event::InitApply(rc)) => self.listing.extend(name_and_handler(&rc)),
            Ok(Event::InitDone) => {
                tracing::debug!(count = self.listing.len(), "RuntimeClasses listed");
                self.classes.replace_all(std::mem::take(&mut self.listing));
            }
            Ok(Event::Apply(rc)) => {
                if let Some((name, handler)) = name_and_handler(&rc) {
                    self.classes.insert(&name, &handler);
                }
            }
            Ok(Event::Delete(rc)) => {
                if let Some(name) = rc.metadata.name.as_deref() {
                    self.classes.remove(name);
                }
            }
            Err(e) => tracing::warn!(error = %e, "RuntimeClass watch failed; retrying"),
        }
    }
}
