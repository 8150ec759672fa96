//! Attribute call sites: the literal settings a resil attribute gives its
//! instance, and the conflict between two sites naming one instance.

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
