//! The guide's pages (`docs/*.md`) as doctests: each page is the doc comment
//! of one item here, so `cargo test --doc` compiles and runs every Rust block
//! in it. A page whose examples need a cargo feature is included under that
//! feature. Add a page: one `#[doc = include_str!(…)]` item below.
#![allow(dead_code)]

#[doc = include_str!("../docs/operating-a-fleet.md")]
pub struct OperatingAFleet;
