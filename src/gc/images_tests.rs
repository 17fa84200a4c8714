use super::*;

fn img(id: &str, size: u64) -> v1::Image {
    v1::Image {
        id: id.into(),
        repo_tags: vec![format!("example.com/{id}:1")],
        size,
        ..Default::default()
    }
}

fn using(image: &str) -> v1::Container {
    v1::Container {
        image: Some(v1::ImageSpec {
            image: image.into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn ids(v: &[Candidate]) -> Vec<&str> {
    v.iter().map(|c| c.id.as_str()).collect()
}

#[test]
fn in_use_by_id_tag_or_digest() {
    let mut d = img("sha256:dd", 1);
    d.repo_digests = vec!["example.com/d@sha256:xyz".into()];
    let images = [img("sha256:aa", 1), img("sha256:bb", 1), img("sha256:cc", 1), d];
    let containers = [
        v1::Container {
            image_ref: "sha256:aa".into(),
            ..Default::default()
        },
        using("example.com/sha256:bb:1"),
        v1::Container {
            image_ref: "example.com/d@sha256:xyz".into(),
            ..Default::default()
        },
    ];
    let mut used: Vec<_> = images_in_use(&images, &containers).into_iter().collect();
    used.sort();
    assert_eq!(used, ["sha256:aa", "sha256:bb", "sha256:dd"]);
}

#[tokio::test(start_paused = true)]
async fn detection_and_lru_order() {
    let t0 = Instant::now();
    let mut r = ImageRecords::default();
    let images = vec![img("a", 10), img("b", 20), img("c", 30), img("d", 40)];
    // round 1: c in use
    r.detect(&images, &["c".to_string()].into(), t0);
    tokio::time::advance(Duration::from_secs(60)).await;
    let t1 = Instant::now();
    // round 2: a in use; c no longer; d vanished
    r.detect(&images[..3], &["a".to_string()].into(), t1);
    assert!(!r.0.contains_key("d"), "vanished images are forgotten");
    assert_eq!(r.0["c"].last_used, Some(t0));
    assert_eq!(r.0["a"].first_detected, t0, "first detection is kept");
    // never used (b) before used long ago (c); in use (a) left out
    assert_eq!(
        ids(&r.eviction_order(&["a".to_string()].into(), &HashSet::new())),
        ["b", "c"]
    );
    // protected (sandbox image) and pinned ones are never candidates
    let mut pinned = images.clone();
    pinned[1].pinned = true;
    r.detect(&pinned[..3], &HashSet::new(), t1);
    assert_eq!(
        ids(&r.eviction_order(&HashSet::new(), &["c".to_string()].into())),
        ["a"]
    );
}

#[test]
fn bytes_to_free_table() {
    let p = ImageGcPolicy::default(); // 85 / 80
    // (capacity, available, bytes to free; None: invalid capacity)
    let cases = [
        (100, 16, Some(None)),    // 84 % used
        (100, 15, Some(Some(5))), // 85 %: free down to 80 % → 20 available
        (100, 0, Some(Some(20))), // full
        (100, 150, Some(None)),   // available > capacity is clamped
        (0, 0, None),             // invalid capacity
        (1000, 100, Some(Some(100))),
    ];
    for (capacity, available, want) in cases {
        let got = bytes_to_free(FsUsage { capacity, available }, &p);
        assert_eq!(got.as_ref().ok().copied(), want, "{capacity}/{available}");
        if want.is_none() {
            assert!(matches!(got, Err(GcError::InvalidCapacity)));
        }
    }
}

#[tokio::test(start_paused = true)]
async fn min_age_and_max_age() {
    let began = Instant::now();
    let mut r = ImageRecords::default();
    r.detect(&[img("old", 1)], &["old".to_string()].into(), began);
    tokio::time::advance(Duration::from_secs(100)).await;
    r.detect(&[img("old", 1), img("new", 1)], &HashSet::new(), Instant::now());
    let now = Instant::now();
    let order = r.eviction_order(&HashSet::new(), &HashSet::new());
    assert_eq!(ids(&order), ["new", "old"], "never used first");
    // min age 2 min: `new` was first seen just now, `old` 100 s ago → neither
    assert!(space_candidates(order.clone(), Duration::from_secs(120), now).is_empty());
    assert_eq!(
        ids(&space_candidates(order.clone(), Duration::from_secs(60), now)),
        ["old"]
    );
    // max age off, or the GC not running long enough: nothing by age
    let mut p = ImageGcPolicy::default();
    assert!(split_old_images(order.clone(), &p, now, began).0.is_empty());
    p.max_age = Duration::from_secs(150);
    assert!(split_old_images(order.clone(), &p, now, began).0.is_empty());
    // 1 h later: both unused for longer than max age
    let later = now + Duration::from_secs(3600);
    let (old, rest) = split_old_images(order.clone(), &p, later, began);
    assert_eq!((ids(&old), rest.len()), (vec!["new", "old"], 0));
    // max age 300 s, 400 s after start: old (last used at 0) goes, new (never used) too
    p.max_age = Duration::from_secs(300);
    let (old, _) = split_old_images(order, &p, began + Duration::from_secs(400), began);
    assert_eq!(ids(&old), ["new", "old"]);
}
