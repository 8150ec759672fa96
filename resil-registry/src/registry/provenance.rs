//! Where each configuration value of an instance came from.

use std::collections::HashMap;

use crate::primitive::Primitive;

use super::plan::plan;
use super::resolve::Labelled;
use super::Registry;

impl Registry {
    /// Which layer set each configuration value of instance `name`,
    /// recorded while resolving it again (see [`Labelled`]).
    pub(crate) fn labelled<P: Primitive>(&self, name: &str) -> Labelled<'static> {
        let site = self
            .inner
            .sites
            .lock()
            .get(&(P::KIND, name.to_owned()))
            .copied();
        let mut labelled = Labelled::new::<P>(site);
        let code = self.store::<P>().code.read();
        let file = self.file();
        let _ = self.resolve_layers::<P>(&file, &code, name, &mut labelled);
        labelled
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
