//! The event recorder (upstream client-go `tools/record` as the kubelet uses
//! it): [`EventRecorderActor`] receives every [`RecordEvent`](crate::messages::event::RecordEvent)
//! the [`EventRecorder`](crate::events::EventRecorder) handles send and
//! writes core/v1 Events in the involved object's namespace (`default` for
//! the Node), aggregated and rate limited like upstream.
//!
//! Pure parts, each tested on its own: [`event_object`] (the Event and the
//! repeat patch), [`correlator`] (aggregation, repeats, spam filter),
//! [`outbox`] (waiting writes), [`lru`]; [`sink`] does one write.

pub mod actor;
pub mod correlator;
pub mod event_object;
pub mod lru;
pub mod outbox;
pub mod sink;

pub use actor::{EventRecorderActor, RetryPolicy};
pub use correlator::{CorrelatorConfig, EventCorrelator};
