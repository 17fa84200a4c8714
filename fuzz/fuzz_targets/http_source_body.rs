//! The `staticPodURL` source's body handling (`http_source::load_body`:
//! UTF-8 check, then the static pod pipeline). No panic whatever the server
//! answers; a non-UTF-8 body is a read error, not a parse error.
#![no_main]

use actlet::config::http_source::load_body;
use actlet::config::manifest::Error;
use libfuzzer_sys::fuzz_target;

const URL: &str = "http://config.local/pods";

fuzz_target!(|data: &[u8]| {
    match load_body(data.to_vec(), URL, "node-1") {
        Ok(pods) => {
            for pod in pods {
                let source = pod.metadata.annotations.as_ref().and_then(|a| a.get("kubernetes.io/config.source"));
                assert_eq!(source.map(String::as_str), Some("http"));
                assert_eq!(pod.spec.and_then(|s| s.node_name).as_deref(), Some("node-1"));
            }
        }
        Err(Error::Read { origin, .. }) => {
            assert!(std::str::from_utf8(data).is_err(), "only bad UTF-8 is a read error");
            assert_eq!(origin, URL);
        }
        Err(e) => assert_eq!(e.origin(), URL, "errors name the URL"),
    }
});
