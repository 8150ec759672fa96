//! Where each configuration value of an instance came from.

use std::collections::HashMap;

use crate::kind::Primitive;

use super::plan::plan;
use super::Registry;

impl Registry {
    /// Where each configuration value of an instance came from, by key, when
    /// a config file set it: `(value as the snapshot writes it, source)`.
    pub(crate) fn provenance<P: Primitive>(
        &self,
        name: &str,
    ) -> HashMap<&'static str, (String, String, String)> {
        let code = self.store::<P>().code.read();
        let file = self.file();
        let Ok(plan) = plan::<P>(&file, &code, name) else {
            return HashMap::new();
        };
        let sources: HashMap<String, (String, String)> = plan
            .entry
            .provenance()
            .into_iter()
            .map(|p| {
                let location = p.location.unwrap_or_else(|| "default".to_owned());
                (p.key, (p.source.to_string(), location))
            })
            .collect();
        crate::telemetry::describe::describe_config(plan.entry.config())
            .into_iter()
            .filter_map(|(key, value)| {
                let (source, location) = sources.get(key)?;
                Some((key, (value, source.clone(), location.clone())))
            })
            .collect()
    }

    /// Where each key the file sets for instance `name` of kind `P` came
    /// from (`instance`, a config's name, an env variable); keys the file
    /// leaves unset are absent.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn file_sources<P: Primitive>(&self, name: &str) -> HashMap<String, String> {
        let code = self.store::<P>().code.read();
        let file = self.file();
        let Ok(plan) = plan::<P>(&file, &code, name) else {
            return HashMap::new();
        };
        plan.entry
            .provenance()
            .into_iter()
            .filter(|p| p.path.is_some())
            .map(|p| (p.key, p.source.to_string()))
            .collect()
    }
}
