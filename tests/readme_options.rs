//! The guide's option table (`docs/configuration.md`) is the option table:
//! the block between its
//! markers is exactly `resil::options::markdown()`. Run with
//! `RESIL_BLESS=1` to rewrite the block after changing a row.

const START: &str = "<!-- option-table:start (generated from resil-options; RESIL_BLESS=1 cargo test --test readme_options) -->\n";
const END: &str = "<!-- option-table:end -->";

#[test]
fn the_readme_option_table_is_generated_from_the_one_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/configuration.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let start = readme
        .find(START)
        .expect("docs/configuration.md has the option table's start marker")
        + START.len();
    let end = start + readme[start..].find(END).expect("and its end marker");
    let generated = format!("\n{}", resil::options::markdown());
    if std::env::var_os("RESIL_BLESS").is_some() {
        let updated = format!("{}{generated}{}", &readme[..start], &readme[end..]);
        std::fs::write(path, updated).unwrap();
        return;
    }
    assert!(
        readme[start..end] == generated,
        "the option table in docs/configuration.md differs from resil-options; run RESIL_BLESS=1 cargo test --test readme_options"
    );
}
