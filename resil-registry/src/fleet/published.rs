//! Config versions published to the fleet: a version promoted or rolled
//! back on one replica is applied on every replica, only when an operator
//! publishes it ([`Fleet::publish_version`]), never automatically.
//!
//! - **The change** goes out on the fleet's channel like a switch; each
//!   replica applies it once as a reload (all or nothing, its own `RESIL_…`
//!   environment on top, operator switches kept), recorded as a version
//!   from `push from fleet …`, and writes one audit line (target
//!   `resil::fleet`: who, which version, from which replica, the local
//!   version it became or why it was refused).
//! - **What is in force** is the key `{namespace}:config`: a replica that
//!   joins later applies the published config too, until an operator
//!   withdraws it ([`Fleet::withdraw_version`]; running replicas keep what
//!   they have, new ones follow their own files again).
//! - The config travels as `.properties` text: every key of the version
//!   (the application's too), `${…}` placeholders already resolved on the
//!   publishing replica. Receiving it needs the `properties` feature.
//!   It is stored in Redis: a secret written in the file is stored there
//!   too.

use std::collections::BTreeMap;
use std::time::Instant;

use redis::Commands;

use super::{esc, unesc, Fleet, Follower};
use crate::config::{FileConfig, Format};
use crate::registry::Registry;
use crate::versions::{VersionError, VersionSource};

/// One published config (or its withdrawal) as it travels.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ConfigRecord {
    pub(super) id: String,
    pub(super) who: String,
    /// The publishing replica.
    pub(super) replica: String,
    /// The version's number on the publishing replica.
    pub(super) version: u64,
    /// `None`: the published config is withdrawn.
    pub(super) text: Option<String>,
    pub(super) made: Instant,
}

impl ConfigRecord {
    pub(super) fn encode(&self) -> String {
        [
            "c1".to_owned(),
            esc(&self.id),
            esc(&self.who),
            esc(&self.replica),
            self.version.to_string(),
            match &self.text {
                Some(text) => format!("+{}", esc(text)),
                None => "-".to_owned(),
            },
        ]
        .join("|")
    }

    pub(super) fn decode(text: &str) -> Option<ConfigRecord> {
        let parts: Vec<&str> = text.splitn(6, '|').collect();
        let [v, id, who, replica, version, body] = parts.as_slice() else {
            return None;
        };
        if *v != "c1" {
            return None;
        }
        let text = match body.strip_prefix('+') {
            Some(t) => Some(unesc(t)),
            None if *body == "-" => None,
            None => return None,
        };
        Some(ConfigRecord {
            id: unesc(id),
            who: unesc(who),
            replica: unesc(replica),
            version: version.parse().ok()?,
            text,
            made: Instant::now(),
        })
    }
}

/// `file`'s keys as `.properties` text, one `key=value` line per key (the
/// last value of a key a later document set again).
pub(super) fn properties_text(file: &FileConfig) -> String {
    let mut last = BTreeMap::new();
    for (k, v) in file.all_properties() {
        last.insert(k.as_str(), v.as_str());
    }
    let mut out = String::new();
    for (k, v) in last {
        out.push_str(&escape(k, true));
        out.push('=');
        out.push_str(&escape(v, false));
        out.push('\n');
    }
    out
}

/// Escapes a `.properties` key or value (what the loader unescapes).
fn escape(s: &str, key: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0c' => out.push_str("\\f"),
            '=' | ':' | ' ' if key => {
                out.push('\\');
                out.push(c);
            }
            ' ' if i == 0 => out.push_str("\\ "),
            '#' | '!' if key && i == 0 => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

impl Fleet {
    /// Publishes the kept version `id` of this replica (a promoted shadow
    /// trial, a rollback, any applied or staged version) to every replica
    /// of the fleet, `who` named in every replica's audit line: each applies
    /// it as a reload, and a replica that joins later applies it too, until
    /// [`withdraw_version`](Self::withdraw_version). Nothing is published
    /// automatically: a promotion or a rollback acts on this replica alone
    /// until this is called. With Redis down, it waits in the outbox like a
    /// switch ([`FleetStatus::unsent`](super::FleetStatus::unsent)).
    pub fn publish_version(&self, id: u64, who: &str) -> Result<(), VersionError> {
        let registry = self.registry().map_err(|_| VersionError::Unknown(id))?;
        let file = registry.kept_file(id)?;
        self.push_config(who, id, Some(properties_text(&file)));
        Ok(())
    }

    /// Withdraws the published config: running replicas keep the config
    /// they have, replicas that join later follow their own files again.
    pub fn withdraw_version(&self, who: &str) {
        self.push_config(who, 0, None);
    }

    fn push_config(&self, who: &str, version: u64, text: Option<String>) {
        let seq = self
            .shared
            .next
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let record = ConfigRecord {
            id: format!("{}:{seq}", self.shared.options.replica),
            who: who.to_owned(),
            replica: self.shared.options.replica.clone(),
            version,
            text,
            made: Instant::now(),
        };
        config_audit(&self.shared.options.replica, &record, "made here", None);
        self.shared.configs.lock().push_back(record);
        self.shared.refresh_unsent();
    }
}

/// One audit line for one published config on one replica.
fn config_audit(replica: &str, record: &ConfigRecord, how: &str, outcome: Option<&str>) {
    let what = match &record.text {
        Some(_) => format!("publish config version {}", record.version),
        None => "withdraw the published config".to_owned(),
    };
    tracing::info!(
        target: "resil::fleet",
        replica,
        id = %record.id,
        who = %record.who,
        what = %what,
        from = %record.replica,
        outcome = outcome.unwrap_or(""),
        "fleet config {how}: {what} from replica {} by {}{}",
        record.replica,
        record.who,
        outcome.map(|o| format!(": {o}")).unwrap_or_default()
    );
}

impl Follower {
    /// Shares every config published here that the fleet has not received.
    pub(super) fn flush_configs(
        &mut self,
        cmd: &mut redis::Connection,
        ns: &str,
    ) -> redis::RedisResult<()> {
        loop {
            let Some(record) = self.shared.configs.lock().front().cloned() else {
                return Ok(());
            };
            let key = format!("{ns}:config");
            match &record.text {
                Some(_) => {
                    let _: () = cmd.set(&key, record.encode())?;
                }
                None => {
                    let _: () = cmd.del(&key)?;
                }
            }
            let _: () = cmd.publish(format!("{ns}:changes"), record.encode())?;
            self.seen.insert(record.id.clone());
            self.shared.configs.lock().pop_front();
            self.shared.refresh_unsent();
        }
    }

    /// Applies the config published in the fleet, if any (on joining).
    pub(super) fn read_config(
        &mut self,
        cmd: &mut redis::Connection,
        ns: &str,
    ) -> redis::RedisResult<()> {
        let stored: Option<String> = cmd.get(format!("{ns}:config"))?;
        if let Some(record) = stored.as_deref().and_then(ConfigRecord::decode) {
            self.apply_config(record);
        }
        Ok(())
    }

    /// Applies a published config once (its own are in force here).
    pub(super) fn apply_config(&mut self, record: ConfigRecord) {
        if !self.seen.insert(record.id.clone()) {
            return;
        }
        let Some(inner) = self.registry.upgrade() else {
            return;
        };
        let registry = Registry { inner };
        let Some(text) = &record.text else {
            config_audit(
                &self.shared.options.replica,
                &record,
                "applied from the fleet",
                None,
            );
            return;
        };
        let source = VersionSource::Push(format!(
            "fleet {} from {}: version {} by {}",
            self.shared.options.namespace, record.replica, record.version, record.who
        ));
        let loaded = FileConfig::from_str_with_env(text, Format::Properties, std::env::vars());
        let outcome = match loaded {
            Ok(file) => match registry.reload_from(file, source) {
                Ok(_) => format!(
                    "applied as version {}",
                    registry.active_config_version().unwrap_or(0)
                ),
                Err(e) => format!("refused: {e}"),
            },
            Err(e) => format!("refused: {e}"),
        };
        config_audit(
            &self.shared.options.replica,
            &record,
            "applied from the fleet",
            Some(&outcome),
        );
        self.shared.status.lock().applied_from_fleet += 1;
        self.shared.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_record_survives_its_encoding_with_separators_in_its_text() {
        let record = ConfigRecord {
            id: "r1:3".into(),
            who: "alice|ops".into(),
            replica: "r1".into(),
            version: 7,
            text: Some("a.b=1|2\nc.d=100%\n".into()),
            made: Instant::now(),
        };
        let back = ConfigRecord::decode(&record.encode()).unwrap();
        assert_eq!((back.who.as_str(), back.version), ("alice|ops", 7));
        assert_eq!(back.text, record.text);
        let withdrawn = ConfigRecord {
            text: None,
            ..record
        };
        assert_eq!(
            ConfigRecord::decode(&withdrawn.encode()).unwrap().text,
            None
        );
    }

    #[cfg(all(feature = "properties", feature = "yaml"))]
    #[test]
    fn a_version_travels_as_properties_that_load_to_the_same_keys() {
        let file = FileConfig::from_yaml_str(
            "resilience4j.circuitbreaker.instances.inventory:
  failure-rate-threshold: 40
  record-errors: [timeout, 'a b']
app.greeting: \"hello = world: #1\\\\n\"
",
        )
        .unwrap();
        let text = properties_text(&file);
        let back = FileConfig::from_str_with_env(&text, Format::Properties, [("", ""); 0]).unwrap();
        assert_eq!(
            crate::versions::keys_of(&back),
            crate::versions::keys_of(&file),
            "{text}"
        );
        assert_eq!(back.property("app.greeting"), file.property("app.greeting"));
    }
}
