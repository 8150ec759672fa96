//! Collects every independent misuse so one compile reports them all.

/// Errors found so far. Dropping it unchecked is a bug in the macro, as with
/// serde's `Ctxt`: every path must end in [`Errors::finish`].
#[derive(Default)]
pub(crate) struct Errors {
    errors: Vec<syn::Error>,
    checked: bool,
}

impl Errors {
    pub(crate) fn new() -> Self {
        Errors::default()
    }

    pub(crate) fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// `Ok` if nothing was reported, else every error combined.
    pub(crate) fn finish(mut self) -> syn::Result<()> {
        self.checked = true;
        let mut errors = std::mem::take(&mut self.errors).into_iter();
        match errors.next() {
            None => Ok(()),
            Some(mut first) => {
                for e in errors {
                    first.combine(e);
                }
                Err(first)
            }
        }
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if !self.checked && !std::thread::panicking() {
            panic!("resil-macros: errors were collected but never reported");
        }
    }
}
