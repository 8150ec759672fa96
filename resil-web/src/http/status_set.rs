//! Sets of HTTP status codes, parsed from `500-599, 408`.

use std::fmt;

use http::StatusCode;

/// A set of HTTP status codes (100–999), as config files write them:
/// single codes and inclusive ranges, separated by commas
/// (`"500-599, 408"`).
///
/// ```
/// use resil_web::http::StatusSet;
///
/// let set = StatusSet::parse("500-599, 408").unwrap();
/// assert!(set.contains(503) && set.contains(408) && !set.contains(404));
/// assert_eq!(set.to_string(), "408, 500-599");
///
/// let err = StatusSet::parse("500-599, 60x").unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid status `60x` in `500-599, 60x`: expected a status code (100-999) \
///      or a range of them such as `500-599`"
/// );
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StatusSet {
    // Bit `code - 100` for codes 100..=999: 900 bits.
    bits: [u64; 15],
}

/// A status set that does not parse, naming the token: the config loader's
/// own error, as one grammar reads status sets in code and in files
/// ([`resil_registry::config::parse_status_ranges`]).
pub use resil_registry::config::StatusSetError;

impl StatusSet {
    /// The empty set.
    pub const fn new() -> Self {
        StatusSet { bits: [0; 15] }
    }

    /// Parses `"500-599, 408"`: comma-separated codes and inclusive ranges;
    /// whitespace around each is ignored. An empty string is the empty set.
    /// The grammar is the config loader's (`resil.http` keys are checked
    /// with it as the file loads).
    pub fn parse(input: &str) -> Result<StatusSet, StatusSetError> {
        Ok(StatusSet::from_ranges(
            &resil_registry::config::parse_status_ranges(input)?,
        ))
    }

    /// The set of the inclusive ranges `(lo, hi)` (clamped to 100–999): a
    /// config file's validated set
    /// ([`StatusList::ranges`](resil_registry::config::StatusList::ranges)).
    pub fn from_ranges(ranges: &[(u16, u16)]) -> StatusSet {
        ranges
            .iter()
            .fold(StatusSet::new(), |set, &(lo, hi)| set.with_range(lo, hi))
    }

    /// Parses each item of a list (a config file's `[500-599, 408]`).
    pub fn parse_list<S: AsRef<str>>(items: &[S]) -> Result<StatusSet, StatusSetError> {
        let mut set = StatusSet::new();
        for item in items {
            set = set.union(StatusSet::parse(item.as_ref())?);
        }
        Ok(set)
    }

    /// This set plus the codes `lo..=hi` (clamped to 100–999).
    pub const fn with_range(mut self, lo: u16, hi: u16) -> Self {
        let mut c = if lo < 100 { 100 } else { lo };
        let hi = if hi > 999 { 999 } else { hi };
        while c <= hi {
            let i = (c - 100) as usize;
            self.bits[i / 64] |= 1 << (i % 64);
            c += 1;
        }
        self
    }

    /// This set plus `code`.
    pub const fn with(self, code: u16) -> Self {
        self.with_range(code, code)
    }

    /// Both sets' codes.
    pub fn union(mut self, other: StatusSet) -> Self {
        for (a, b) in self.bits.iter_mut().zip(other.bits) {
            *a |= b;
        }
        self
    }

    /// Whether `code` is in the set.
    #[inline]
    pub fn contains(&self, code: u16) -> bool {
        if !(100..=999).contains(&code) {
            return false;
        }
        let i = usize::from(code - 100);
        self.bits[i / 64] & (1 << (i % 64)) != 0
    }

    /// Whether `status` is in the set.
    #[inline]
    pub fn contains_status(&self, status: StatusCode) -> bool {
        self.contains(status.as_u16())
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|b| *b == 0)
    }

    fn ranges(&self) -> Vec<(u16, u16)> {
        let mut out: Vec<(u16, u16)> = Vec::new();
        for c in 100..=999u16 {
            if self.contains(c) {
                match out.last_mut() {
                    Some((_, hi)) if *hi + 1 == c => *hi = c,
                    _ => out.push((c, c)),
                }
            }
        }
        out
    }
}

/// `408, 500-599`: the form [`StatusSet::parse`] reads.
impl fmt::Display for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (lo, hi)) in self.ranges().into_iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StatusSet({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_renders_in_the_form_it_parses_from() {
        for input in ["", "200", "408, 500-599", "100-999", "404, 406-410, 999"] {
            let set = StatusSet::parse(input).unwrap();
            assert_eq!(set.to_string(), input);
            assert_eq!(StatusSet::parse(&set.to_string()).unwrap(), set);
        }
    }

    #[test]
    fn codes_outside_the_valid_range_are_never_members() {
        let set = StatusSet::new().with_range(0, 2000);
        assert!(set.contains(100) && set.contains(999));
        assert!(!set.contains(99) && !set.contains(1000) && !set.contains(0));
    }
}
