//! etcd v3 as a config source (feature `etcd`): a key prefix holds the same
//! tree as the file, one key per setting
//! (`/resil/resilience4j.circuitbreaker.instances.inventory.sliding-window-size`
//! = `50`; a `/` after the prefix reads as a `.`), and a watch on the prefix
//! applies every change as a version.
//!
//! On every change the whole prefix is read again and loaded as one
//! config (as a `.properties` file of those keys, with the `RESIL_…`
//! environment on top): all or nothing, every problem with its key. While
//! etcd cannot be reached the registry keeps the config in force and says
//! so (one WARN line, [`Registry::config_sources`](crate::Registry::config_sources)),
//! retrying every [`DEFAULT_ETCD_RETRY`] (or [`EtcdSource::retry_every`]);
//! back, it reads the prefix and applies it if it changed meanwhile.

use std::time::Duration;

use etcd_client::{Client, ConnectOptions, GetOptions, WatchOptions};

use super::{ConfigSource, Feed};
use crate::config::{FileConfig, Format};

/// How long an unreachable etcd is left before the next try.
pub const DEFAULT_ETCD_RETRY: Duration = Duration::from_secs(1);

/// How often a quiet watch checks whether its registry is gone.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// The config under a key prefix of an etcd v3 cluster.
#[derive(Debug, Clone)]
pub struct EtcdSource {
    endpoints: Vec<String>,
    prefix: String,
    retry: Duration,
}

impl EtcdSource {
    /// The keys under `prefix` (`/resil/`) on the cluster at `endpoints`
    /// (`http://127.0.0.1:2379`).
    pub fn new<E: Into<String>>(endpoints: impl IntoIterator<Item = E>, prefix: &str) -> Self {
        EtcdSource {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            prefix: prefix.to_owned(),
            retry: DEFAULT_ETCD_RETRY,
        }
    }

    /// How long to wait before trying an unreachable etcd again (default
    /// [`DEFAULT_ETCD_RETRY`]; at least 10 ms).
    pub fn retry_every(mut self, every: Duration) -> Self {
        self.retry = every.max(Duration::from_millis(10));
        self
    }

    /// One connection's life: read, apply, watch until an error.
    async fn follow(&self, feed: &Feed, last: &mut Option<String>) -> Result<(), String> {
        let options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(5))
            .with_keep_alive(Duration::from_secs(2), Duration::from_secs(2));
        let mut client = Client::connect(&self.endpoints, Some(options))
            .await
            .map_err(|e| e.to_string())?;
        let mut watch = client
            .watch(
                self.prefix.as_str(),
                Some(WatchOptions::new().with_prefix()),
            )
            .await
            .map_err(|e| e.to_string())?;
        // Read after the watch exists, so no change falls between the two.
        self.read(&mut client, feed, last).await?;
        feed.reachable();
        loop {
            match tokio::time::timeout(IDLE_CHECK, watch.message()).await {
                Err(_) if feed.alive() => {}
                Err(_) => return Ok(()),
                Ok(Ok(Some(_))) => self.read(&mut client, feed, last).await?,
                Ok(Ok(None)) => return Err("the watch was closed".to_owned()),
                Ok(Err(e)) => return Err(e.to_string()),
            }
        }
    }

    /// Reads the prefix and pushes it when it changed since `last`.
    async fn read(
        &self,
        client: &mut Client,
        feed: &Feed,
        last: &mut Option<String>,
    ) -> Result<(), String> {
        let response = client
            .get(self.prefix.as_str(), Some(GetOptions::new().with_prefix()))
            .await
            .map_err(|e| e.to_string())?;
        let mut lines = Vec::new();
        for kv in response.kvs() {
            let (Ok(key), Ok(value)) = (kv.key_str(), kv.value_str()) else {
                continue;
            };
            let key = key.strip_prefix(&self.prefix).unwrap_or(key);
            lines.push(line(key, value));
        }
        lines.sort();
        let text = lines.join("\n");
        if last.as_deref() == Some(text.as_str()) {
            return Ok(());
        }
        let file = FileConfig::from_str_with_env(&text, Format::Properties, std::env::vars());
        // The reload writes the attempt's one log line.
        if feed.push(file).is_none() {
            return Ok(());
        }
        *last = Some(text);
        Ok(())
    }
}

/// One key of the prefix as a `.properties` line: `/` as `.`, a value on
/// one line (a line break in a value would start another key, so it is
/// written as the escape the format reads back).
fn line(key: &str, value: &str) -> String {
    let key = key.trim_start_matches('/').replace('/', ".");
    let value = value.replace('\\', "\\\\").replace('\n', "\\n");
    format!("{key}={value}")
}

impl ConfigSource for EtcdSource {
    fn name(&self) -> String {
        format!("etcd {} {}", self.endpoints.join(","), self.prefix)
    }

    fn run(self: Box<Self>, feed: Feed) {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(r) => r,
            Err(e) => {
                feed.unreachable(&format!("no runtime for the etcd client: {e}"));
                return;
            }
        };
        let mut last = None;
        while feed.alive() {
            if let Err(e) = runtime.block_on(self.follow(&feed, &mut last)) {
                feed.unreachable(&e);
                std::thread::sleep(self.retry);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_becomes_one_properties_line() {
        assert_eq!(line("a/b.c", "1"), "a.b.c=1");
        assert_eq!(line("/x", "a\nb"), "x=a\\nb");
    }
}
