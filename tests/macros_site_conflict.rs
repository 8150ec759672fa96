//! Two call sites giving one instance different literal settings: the first
//! site's stay in force, the second's are refused with an error event naming
//! both sites and the keys, and the snapshot says which attribute set each
//! value. Neither site silently changes the other's instance.

use std::sync::atomic::{AtomicU32, Ordering};

use resil::registry_crate::{Kind, RegistryEventKind};
use resil::{registry, Rejection};

#[derive(Debug, PartialEq)]
struct Down;

impl From<Rejection> for Down {
    fn from(_: Rejection) -> Self {
        Down
    }
}

static A: AtomicU32 = AtomicU32::new(0);
static B: AtomicU32 = AtomicU32::new(0);
static C: AtomicU32 = AtomicU32::new(0);

#[resil::retry(name = "shared", max_attempts = 2, wait_duration = "0ms")]
fn a() -> Result<(), Down> {
    A.fetch_add(1, Ordering::SeqCst);
    Err(Down)
}

#[resil::retry(name = "shared", max_attempts = 5, wait_duration = "0ms")]
fn b() -> Result<(), Down> {
    B.fetch_add(1, Ordering::SeqCst);
    Err(Down)
}

// The same literals as `a`: no conflict.
#[resil::retry(name = "shared", max_attempts = 2, wait_duration = "0ms")]
fn c() -> Result<(), Down> {
    C.fetch_add(1, Ordering::SeqCst);
    Err(Down)
}

#[test]
fn a_second_site_with_other_literals_is_reported_and_changes_nothing() {
    let mut events = registry().subscribe();
    assert_eq!(a(), Err(Down));
    assert_eq!(A.load(Ordering::SeqCst), 2);

    assert_eq!(b(), Err(Down));
    assert_eq!(B.load(Ordering::SeqCst), 2, "b's literals were refused");
    for _ in 0..3 {
        let _ = a();
    }
    assert_eq!(A.load(Ordering::SeqCst), 8, "a keeps its 2 attempts");
    assert_eq!(c(), Err(Down));
    assert_eq!(C.load(Ordering::SeqCst), 2);

    let conflict = std::iter::from_fn(|| events.try_recv())
        .find_map(|e| match e.what {
            RegistryEventKind::AttributeConflict {
                first,
                second,
                keys,
            } => Some((e.kind, e.name, first, second, keys)),
            _ => None,
        })
        .expect("an AttributeConflict event");
    let (kind, name, first, second, keys) = conflict;
    assert_eq!((kind, &*name), (Kind::Retry, "shared"));
    assert!(
        first.starts_with("tests/macros_site_conflict.rs:"),
        "{first}"
    );
    assert!(
        second.starts_with("tests/macros_site_conflict.rs:"),
        "{second}"
    );
    assert_ne!(first, second);
    assert_eq!(keys, ["max_attempts"]);

    // The snapshot names the attribute that set the value in force.
    let snapshot = registry().snapshot();
    let i = snapshot.instance(Kind::Retry, "shared").unwrap();
    let v = i.config_value("max-attempts").unwrap();
    assert_eq!(v.value, "2");
    assert_eq!(v.location, format!("attribute at {first}"));
}
