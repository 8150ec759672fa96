//! Names in snake case: the one conversion every reader of a Java or Rust
//! name uses, so `#[derive(ErrorClass)]`'s variant names, the Java class
//! names a config file lists and the attribute macros' hints for
//! Resilience4j's camelCase keys agree on every input.

/// Converts a CamelCase, camelCase, kebab-case or snake_case name to
/// snake_case, the way resil names error classes and attribute keys.
///
/// - A capital after a lowercase letter or a digit starts a word:
///   `HttpServerError` → `http_server_error`, `maxAttempts` → `max_attempts`,
///   `Http2Error` → `http2_error`.
/// - A run of capitals is one word, and its last capital starts the next word
///   when a lowercase letter follows: `IOException` → `io_exception`,
///   `HTTPError` → `http_error`, `HTTP` → `http`.
/// - `-` and `_` separate words and are written as one `_` however many
///   there are: `kebab-case` → `kebab_case`, `Foo__Bar` → `foo_bar`.
/// - Digits and other characters are kept as they are: `Timeout503` →
///   `timeout503`.
///
/// Nothing is dropped: a caller that wants `InventoryConnectionException` to
/// mean `inventory_connection` strips the `Exception` suffix first.
///
/// ```
/// use resil_options::case::snake_case;
///
/// assert_eq!(snake_case("InventoryConnection"), "inventory_connection");
/// assert_eq!(snake_case("IOException"), "io_exception");
/// assert_eq!(snake_case("slidingWindowSize"), "sliding_window_size");
/// ```
pub fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = i.checked_sub(1).map(|p| chars[p]);
            let prev_lower = prev.is_some_and(|p| !p.is_ascii_uppercase() && p != '_');
            let prev_upper = prev.is_some_and(|p| p.is_ascii_uppercase());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if (prev_lower || (prev_upper && next_lower)) && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c == '_' || c == '-' {
            if !out.ends_with('_') {
                out.push('_');
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::snake_case;

    #[test]
    fn camel_case_words_are_split_at_each_capital() {
        assert_eq!(snake_case("NotFound"), "not_found");
        assert_eq!(snake_case("HttpServerError"), "http_server_error");
        assert_eq!(snake_case("InventoryConnection"), "inventory_connection");
        assert_eq!(
            snake_case("InventoryConnectionException"),
            "inventory_connection_exception"
        );
        assert_eq!(snake_case("maxAttempts"), "max_attempts");
        assert_eq!(
            snake_case("permittedNumberOfCallsInHalfOpenState"),
            "permitted_number_of_calls_in_half_open_state"
        );
        assert_eq!(snake_case("MaxAttempts"), "max_attempts");
    }

    #[test]
    fn a_run_of_capitals_is_one_word() {
        assert_eq!(snake_case("IOException"), "io_exception");
        assert_eq!(snake_case("HTTPError"), "http_error");
        assert_eq!(snake_case("HTTP"), "http");
        assert_eq!(snake_case("Io"), "io");
        assert_eq!(
            snake_case("SSLHandshakeException"),
            "ssl_handshake_exception"
        );
        assert_eq!(snake_case("maxIOWait"), "max_io_wait");
    }

    #[test]
    fn digits_and_single_words_are_kept() {
        assert_eq!(snake_case("Unavailable"), "unavailable");
        assert_eq!(snake_case("Timeout503"), "timeout503");
        assert_eq!(snake_case("Http2Error"), "http2_error");
        assert_eq!(snake_case("X"), "x");
        assert_eq!(snake_case(""), "");
    }

    #[test]
    fn separators_become_one_underscore() {
        assert_eq!(snake_case("already_snake"), "already_snake");
        assert_eq!(snake_case("kebab-case"), "kebab_case");
        assert_eq!(snake_case("Foo__Bar"), "foo_bar");
        assert_eq!(snake_case("Foo-Bar"), "foo_bar");
        assert_eq!(snake_case("max_Attempts"), "max_attempts");
        assert_eq!(snake_case("_Private"), "_private");
    }
}
