//! Per-key settings: a default and overrides by exact key or `*` pattern,
//! the most specific winning.

use super::StoredKey;

/// A key or a pattern of keys: `*` matches any run of characters
/// (`gold-*`, `*-eu`, `*`); without `*` it matches one key exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    text: Box<str>,
}

impl KeyPattern {
    /// The pattern `text`.
    pub fn new(text: &str) -> Self {
        KeyPattern { text: text.into() }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether this is one exact key (no `*`).
    pub fn is_exact(&self) -> bool {
        !self.text.contains('*')
    }

    /// How specific the pattern is: an exact key beats every pattern, then
    /// the more literal characters, the more specific.
    fn specificity(&self) -> (bool, usize) {
        (
            self.is_exact(),
            self.text.chars().filter(|&c| c != '*').count(),
        )
    }

    /// Whether `key` matches.
    pub fn matches(&self, key: &str) -> bool {
        let mut parts = self.text.split('*');
        let first = parts.next().unwrap_or("");
        let Some(mut rest) = key.strip_prefix(first) else {
            return false;
        };
        let parts: Vec<&str> = parts.collect();
        let Some((last, middle)) = parts.split_last() else {
            return rest.is_empty(); // no `*`: exact
        };
        for part in middle {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
        rest.len() >= last.len() && rest.ends_with(last)
    }
}

/// A default value and overrides by key pattern, as a family's settings per
/// key: [`for_key`](Self::for_key) picks the most specific matching override
/// (an exact key, else the pattern with the most literal characters, else
/// the first declared), or the default.
///
/// ```
/// use resil_core::keyed::Tiers;
///
/// let limits = Tiers::new(10).with_override("gold-*", 1000).with_override("gold-42", 5);
/// assert_eq!(*limits.for_str(Some("gold-7")), 1000);
/// assert_eq!(*limits.for_str(Some("gold-42")), 5);
/// assert_eq!(*limits.for_str(Some("silver-1")), 10);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Tiers<V> {
    default: V,
    overrides: Vec<(KeyPattern, V)>,
}

impl<V> Tiers<V> {
    /// Every key gets `default`.
    pub fn new(default: V) -> Self {
        Tiers {
            default,
            overrides: Vec::new(),
        }
    }

    /// Keys matching `pattern` get `value`.
    pub fn with_override(mut self, pattern: &str, value: V) -> Self {
        self.overrides.push((KeyPattern::new(pattern), value));
        self
    }

    /// The value for keys no override matches.
    pub fn default_value(&self) -> &V {
        &self.default
    }

    /// The overrides, as declared.
    pub fn overrides(&self) -> impl Iterator<Item = (&KeyPattern, &V)> {
        self.overrides.iter().map(|(p, v)| (p, v))
    }

    /// The value for a key whose text is `key` (`None`: a key that is not a
    /// string, which only the default and a bare `*` match).
    pub fn for_str(&self, key: Option<&str>) -> &V {
        let mut best: Option<(&KeyPattern, &V)> = None;
        for (pattern, value) in &self.overrides {
            let hit = match key {
                Some(key) => pattern.matches(key),
                None => pattern.as_str().chars().all(|c| c == '*'),
            };
            if hit && best.is_none_or(|(b, _)| pattern.specificity() > b.specificity()) {
                best = Some((pattern, value));
            }
        }
        best.map_or(&self.default, |(_, v)| v)
    }

    /// The value for `key`.
    pub fn for_key(&self, key: &StoredKey) -> &V {
        self.for_str(key.as_str())
    }

    /// The same tiers with every value mapped by `f`.
    pub fn map<W>(&self, mut f: impl FnMut(&V) -> W) -> Tiers<W> {
        Tiers {
            default: f(&self.default),
            overrides: self
                .overrides
                .iter()
                .map(|(p, v)| (p.clone(), f(v)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_runs_of_characters() {
        let p = KeyPattern::new("gold-*");
        assert!(p.matches("gold-1") && p.matches("gold-") && !p.matches("silver-1"));
        let p = KeyPattern::new("*-eu-*");
        assert!(p.matches("t-eu-1") && !p.matches("t-us-1"));
        let p = KeyPattern::new("a*a");
        assert!(p.matches("aa") && p.matches("aba") && !p.matches("a"));
        assert!(KeyPattern::new("*").matches(""));
        assert!(KeyPattern::new("x").matches("x") && !KeyPattern::new("x").matches("xy"));
    }

    #[test]
    fn the_most_specific_override_wins_whatever_the_order() {
        let t = Tiers::new(0)
            .with_override("*", 1)
            .with_override("tenant-4*", 3)
            .with_override("tenant-42", 4)
            .with_override("tenant-*", 2);
        assert_eq!(*t.for_str(Some("tenant-42")), 4);
        assert_eq!(*t.for_str(Some("tenant-43")), 3);
        assert_eq!(*t.for_str(Some("tenant-5")), 2);
        assert_eq!(*t.for_str(Some("other")), 1);
        assert_eq!(*t.for_str(None), 1);
        assert_eq!(*Tiers::new(0).with_override("a", 1).for_str(None), 0);
    }
}
