//! Unit tests of the retry loop.
