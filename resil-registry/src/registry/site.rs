//! Attribute call sites: the literal settings a resil attribute gives its
//! instance, and the conflict between two sites naming one instance.

use std::sync::Arc;

use crate::error::RegistryError;
use crate::event::RegistryEventKind;
use crate::primitive::Primitive;

use super::Registry;

/// Where a resil attribute is written and the literal settings it gives its
/// instance, as the macros record it (one `static` per call site).
#[derive(Debug)]
pub struct AttributeSite {
    /// `src/inventory.rs:12`.
    pub location: &'static str,
    /// `(setter, value as written)`: `("max_attempts", "2")`.
    pub literals: &'static [(&'static str, &'static str)],
}

impl AttributeSite {
    /// The keys on which `self` and `other` differ (a key one of them sets
    /// and the other does not counts), sorted.
    pub fn differences(&self, other: &AttributeSite) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        let value = |site: &AttributeSite, key: &str| {
            site.literals
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v)
        };
        for (key, _) in self.literals.iter().chain(other.literals) {
            if value(self, key) != value(other, key) && !keys.iter().any(|k| k == key) {
                keys.push((*key).to_owned());
            }
        }
        keys.sort();
        keys
    }
}

impl Registry {
    /// [`configure`](Self::configure) for the literal settings a resil
    /// attribute writes (`#[resil::retry(name = "x", max_attempts = 2)]`):
    /// the first site to run sets them; a later site naming the same
    /// instance with the same literals changes nothing; one with other
    /// literals is refused with [`RegistryError::AttributeConflict`] and an
    /// [`AttributeConflict`](RegistryEventKind::AttributeConflict) event
    /// naming both sites and the keys, and the first site's settings stay.
    ///
    /// Attribute literals are code settings, so they win over the config
    /// file, as Resilience4j's code customizers win over properties; the
    /// snapshot shows each value's `location` (`attribute at src/x.rs:12`)
    /// so an operator sees why a file value is not in force.
    pub fn configure_from_attribute<P: Primitive>(
        &self,
        name: &str,
        site: &'static AttributeSite,
        f: impl Fn(P::Builder) -> P::Builder + Send + Sync + 'static,
    ) -> Result<(), RegistryError> {
        {
            let mut sites = self.inner.sites.lock();
            match sites.get(&(P::KIND, name.to_owned())) {
                Some(first) if first.location == site.location => return Ok(()),
                Some(first) => {
                    let keys = site.differences(first);
                    if keys.is_empty() {
                        return Ok(());
                    }
                    let first = first.location;
                    drop(sites);
                    self.publish(
                        P::KIND,
                        Arc::from(name),
                        RegistryEventKind::AttributeConflict {
                            first,
                            second: site.location,
                            keys: keys.clone(),
                        },
                        None,
                    );
                    return Err(RegistryError::AttributeConflict {
                        kind: P::KIND,
                        name: name.to_owned(),
                        first,
                        second: site.location,
                        keys,
                    });
                }
                None => {
                    sites.insert((P::KIND, name.to_owned()), site);
                }
            }
        }
        let result = self.configure::<P>(name, f);
        if result.is_err() {
            self.inner.sites.lock().remove(&(P::KIND, name.to_owned()));
        }
        result
    }
}
