//! The UI suite: one file per misuse in `tests/ui/fail/` with the exact
//! diagnostic in its `.stderr`. Regenerate snapshots with `TRYBUILD=overwrite
//! cargo test --test ui` and review every `.stderr` diff like code.
//!
//! What must keep compiling and running is in `tests/ui/pass/`, each file a
//! test target of its own (`ui_pass_*` in Cargo.toml): with no pass case
//! here, trybuild checks the misuses with `cargo check` and never builds the
//! dependencies' code.
//!
//! Compiler output changes between releases, so the suite runs only on the
//! toolchain the snapshots were produced with (rustc 1.95, what CI uses).

#[rustversion::attr(
    not(stable(1.95)),
    ignore = "UI snapshots are produced with rustc 1.95; other compilers word diagnostics differently"
)]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
}
