//! Where an instance's configuration comes from: the file's entry, and the
//! chain of configs registered in code whose settings apply.

use crate::chain::{walk, ChainProblem};
use crate::config::{FileConfig, Resolved};
use crate::error::RegistryError;
use crate::kind::Kind;
use crate::primitive::Primitive;
use crate::store::{CodeFn, CodeSettings};

use super::DEFAULT_CONFIG;

/// The configs an instance inherits from, root first: `default`, then each
/// base down to `start`. A config without a base inherits from `default`; a
/// config only the file has (`in_file`) exists, without code settings.
pub(crate) fn config_chain<'a, B>(
    kind: Kind,
    code: &'a CodeSettings<B>,
    start: Option<&'a str>,
    in_file: &dyn Fn(&str) -> bool,
) -> Result<Vec<String>, RegistryError> {
    // No config of its own: `default`'s chain (which may have a base).
    let start = start.unwrap_or(DEFAULT_CONFIG);
    let base = |name: &str| code.configs.get(name).and_then(|c| c.base.as_deref());
    let exists =
        |name: &str| name == DEFAULT_CONFIG || code.configs.contains_key(name) || in_file(name);
    let owned = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
    match walk(start, true, base, exists) {
        Ok(chain) => Ok(owned(&chain)),
        Err(ChainProblem::Cycle { walked, at }) => {
            let mut chain = owned(&walked);
            chain.push(walked[at].to_owned());
            Err(RegistryError::CyclicConfig { kind, chain })
        }
        Err(ChainProblem::UnknownBase { walked, name }) => {
            let mut known: Vec<String> = code.configs.keys().cloned().collect();
            known.sort();
            let mut chain = owned(&walked);
            chain.push(name.to_owned());
            Err(RegistryError::UnknownConfig {
                kind,
                name: name.to_owned(),
                chain,
                known,
            })
        }
    }
}

/// Where an instance's configuration comes from.
pub(crate) struct Plan<'a, P: Primitive> {
    /// The config file's entry it starts from.
    pub(crate) entry: &'a Resolved<P::Config>,
    /// The configs whose code settings apply, root first.
    pub(crate) chain: Vec<String>,
    /// Its own code settings.
    pub(crate) settings: Option<&'a CodeFn<P::Builder>>,
}

/// The plan for instance `name`. Its own settings (in the file or in code)
/// first; for a `circuit_breaker_for(id, group)` id without any, the group's.
pub(crate) fn plan<'a, P: Primitive>(
    file: &'a FileConfig,
    code: &'a CodeSettings<P::Builder>,
    name: &str,
) -> Result<Plan<'a, P>, RegistryError> {
    let section = P::section(file);
    let mut instance = code.instances.get(name);
    let mut lookup = name;
    if let Some(group) = instance
        .filter(|i| !i.has_settings())
        .and_then(|i| i.group.as_deref())
    {
        if section.instance(name).is_none() {
            lookup = group;
            instance = code.instances.get(group);
        }
    }
    let in_file = |n: &str| section.config(n).is_some();
    let (entry, chain) = match instance.and_then(|i| i.config.as_deref()) {
        Some(config) => (
            section.config(config).unwrap_or(section.default_config()),
            config_chain(P::KIND, code, Some(config), &in_file)?,
        ),
        // No config registered in code: no code settings to apply, no chain.
        None if code.configs.is_empty() => (section.for_name(lookup), Vec::new()),
        None => {
            let entry = section.for_name(lookup);
            let mut chain = config_chain(P::KIND, code, None, &in_file)?;
            chain.extend(entry.chain().iter().cloned());
            if !entry.is_instance() {
                chain.push(entry.name().to_owned());
            }
            if section.instance(lookup).is_none() && section.config(lookup).is_none() {
                // A config registered in code under the instance's (or the
                // group's) own name, as the file's same-name rule.
                if code.configs.contains_key(lookup) {
                    chain = config_chain(P::KIND, code, Some(lookup), &in_file)?;
                }
            }
            let mut unique: Vec<String> = Vec::with_capacity(chain.len());
            for c in chain {
                if !unique.contains(&c) {
                    unique.push(c);
                }
            }
            (entry, unique)
        }
    };
    Ok(Plan {
        entry,
        chain,
        settings: instance.and_then(|i| i.settings.as_ref()),
    })
}
