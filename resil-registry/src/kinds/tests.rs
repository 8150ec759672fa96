//! Every kind in the list, checked against the option table.

use resil_options::{Default as Defaulted, Target, Ty};

use crate::config::bind::Bind;
use crate::config::schema::Val;
use crate::kind::Kind;
use crate::primitive::Primitive;
use crate::store::{for_each_kind, KindVisitor};

/// The kinds the list walks, in its order.
fn listed() -> Vec<Kind> {
    struct Kinds(Vec<Kind>);
    impl KindVisitor for Kinds {
        fn visit<P: Primitive>(&mut self) {
            self.0.push(P::KIND);
        }
    }
    let mut kinds = Kinds(Vec::new());
    for_each_kind(&mut kinds);
    kinds.0
}

#[test]
fn the_list_is_every_kind_in_the_enums_order_then_the_unit_test_kind() {
    let mut expected = Kind::ALL.to_vec();
    expected.push(Kind::UnitTestCounter);
    assert_eq!(listed(), expected);
}

/// Every bound key is a core option of the config's kind in the table,
/// bound once, with the value type the table gives it: a misspelt key
/// would otherwise be silently never applied.
#[test]
fn every_binding_is_a_core_row_of_its_kind_with_its_type() {
    struct Check;
    impl KindVisitor for Check {
        fn visit<P: Primitive>(&mut self) {
            let kind = P::KIND;
            let bound = P::Config::default().render_bound();
            for (i, (key, val)) in bound.iter().enumerate() {
                let row = kind
                    .option(key)
                    .unwrap_or_else(|| panic!("{kind} {key}: not in the table"));
                assert_eq!(row.key, *key, "{kind} {key}: not the canonical key");
                assert_eq!(row.target, Target::Core, "{kind} {key}: not a core option");
                let typed = matches!(
                    (row.ty, val),
                    (Ty::Percent, Some(Val::Percent(_)))
                        | (Ty::U32, Some(Val::U32(_)))
                        | (Ty::Usize, Some(Val::Usize(_)))
                        | (Ty::F64, Some(Val::F64(_)))
                        | (Ty::Duration, Some(Val::Duration(_)))
                        | (Ty::Bool, Some(Val::Bool(_)))
                );
                assert!(
                    typed,
                    "{kind} {key}: bound as {val:?}, the table says {:?}",
                    row.ty
                );
                assert!(
                    bound[..i].iter().all(|(k, _)| k != key),
                    "{kind} {key}: bound twice"
                );
            }
        }
    }
    for_each_kind(&mut Check);
}

/// The option table's defaults are resil-core's, as the renderer writes
/// them; every core option with a fixed default is rendered.
#[test]
fn the_option_tables_defaults_are_the_configs_defaults() {
    struct Check;
    impl KindVisitor for Check {
        fn visit<P: Primitive>(&mut self) {
            let kind = P::KIND;
            let values = crate::config::rendered(&P::Config::default());
            for (key, value) in &values {
                let row = kind.option(key).unwrap();
                match row.default {
                    Defaulted::Is(d) => assert_eq!(d, value, "{kind} {key}"),
                    Defaulted::Computed(_) => {}
                    Defaulted::Unset(why) => {
                        panic!("{kind} {key}: rendered {value}, table says unset ({why})")
                    }
                }
            }
            for row in kind.options() {
                if row.target == Target::Core && row.default.value().is_some() {
                    assert!(
                        values.iter().any(|(k, _)| *k == row.key),
                        "{kind} {}: in the table, not rendered",
                        row.key
                    );
                }
            }
        }
    }
    for_each_kind(&mut Check);
}
