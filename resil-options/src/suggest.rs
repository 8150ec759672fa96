//! Did-you-mean: the one suggestion function every reader of a key or a name
//! uses, so a typo gets the same suggestion in an attribute
//! (`#[resil::circuit_breaker(failure_rate_treshold = 50)]`), in a config
//! file (`failure-rate-treshold: 50`), in an environment variable and in a
//! `base-config` or error-class name.

/// The candidate closest to `word`, if it is close enough to be a likely
/// typo of it; `None` when nothing is.
///
/// - Words are compared as keys are matched ([`same_key`](crate::same_key)):
///   in lower case, without `-` and `_`, so `failure_rate_treshold`,
///   `failure-rate-treshold` and `failureRateTreshold` are one typo, and each
///   is as close to `failure-rate-threshold` as to `failure_rate_threshold`.
/// - The distance is the optimal string alignment distance: insertions,
///   deletions, substitutions and transpositions of two neighbours cost one
///   edit each (`nmae` is one edit from `name`).
/// - Close enough is at most a third of the (compared) word's length, and at
///   least 1 and at most 3 edits: `ab` may be `ac`, `colour` is no key.
/// - The first of equally close candidates wins, so list them in the order
///   they should be preferred (the option table's order).
///
/// ```
/// use resil_options::closest;
///
/// let keys = ["failure-rate-threshold", "slow-call-rate-threshold", "max-attempts"];
/// assert_eq!(closest("failure_rate_treshold", keys), Some("failure-rate-threshold"));
/// assert_eq!(closest("max-atempts", keys), Some("max-attempts"));
/// assert_eq!(closest("colour", keys), None);
/// assert_eq!(closest("nmae", ["name", "fallback"]), Some("name"));
/// ```
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word: Vec<char> = compared(word).collect();
    let limit = (word.len() / 3).clamp(1, 3);
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        let candidate_chars: Vec<char> = compared(candidate).collect();
        let d = distance(&word, &candidate_chars);
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// The characters a key is compared by: lower case, without `-` and `_`.
pub(crate) fn compared(key: &str) -> impl Iterator<Item = char> + '_ {
    key.chars()
        .filter(|c| *c != '-' && *c != '_' && *c != '.')
        .flat_map(char::to_lowercase)
}

/// Optimal string alignment distance (Levenshtein plus transpositions of two
/// neighbours).
fn distance(a: &[char], b: &[char]) -> usize {
    // Three rows: two back (for a transposition), one back, this one.
    let mut two_back: Vec<usize> = vec![0; b.len() + 1];
    let mut one_back: Vec<usize> = (0..=b.len()).collect();
    let mut row: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (one_back[j] + 1)
                .min(row[j - 1] + 1)
                .min(one_back[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(two_back[j - 2] + 1);
            }
            row[j] = d;
        }
        std::mem::swap(&mut two_back, &mut one_back);
        std::mem::swap(&mut one_back, &mut row);
    }
    one_back[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(a: &str, b: &str) -> usize {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        distance(&a, &b)
    }

    #[test]
    fn the_distance_counts_edits_and_neighbour_swaps_as_one() {
        assert_eq!(d("kitten", "sitting"), 3);
        assert_eq!(d("", "abc"), 3);
        assert_eq!(d("abc", ""), 3);
        assert_eq!(d("same", "same"), 0);
        assert_eq!(d("nmae", "name"), 1);
        assert_eq!(d("ca", "abc"), 3);
    }

    #[test]
    fn a_typo_gets_one_suggestion_in_every_spelling() {
        let kebab = [
            "failure-rate-threshold",
            "slow-call-rate-threshold",
            "sliding-window-size",
            "max-attempts",
        ];
        let snake = [
            "failure_rate_threshold",
            "slow_call_rate_threshold",
            "sliding_window_size",
            "max_attempts",
        ];
        for (typo, want) in [
            ("failure-rate-treshold", 0),
            ("failure_rate_treshold", 0),
            ("failureRateTreshold", 0),
            ("failure_rate_threshhold", 0),
            ("slidng_window_size", 2),
            ("slidng-window-size", 2),
            ("max-atempts", 3),
            ("max_attempst", 3),
        ] {
            assert_eq!(closest(typo, kebab), Some(kebab[want]), "{typo}");
            assert_eq!(closest(typo, snake), Some(snake[want]), "{typo}");
        }
    }

    #[test]
    fn only_a_likely_typo_is_suggested() {
        let keys = ["name", "fallback", "order", "crate"];
        assert_eq!(closest("nmae", keys), Some("name"));
        assert_eq!(closest("nme", keys), Some("name"));
        assert_eq!(closest("fallbak", keys), Some("fallback"));
        assert_eq!(closest("colour", keys), None);
        assert_eq!(closest("max_attempts", keys), None);
        assert_eq!(closest("ab", ["ac"]), Some("ac"));
        assert_eq!(closest("anything", std::iter::empty()), None);
    }

    #[test]
    fn the_first_of_equally_close_candidates_wins() {
        assert_eq!(closest("cat", ["bat", "hat"]), Some("bat"));
        assert_eq!(closest("cat", ["hat", "bat"]), Some("hat"));
    }
}
