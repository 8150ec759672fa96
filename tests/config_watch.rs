//! The config file watcher against a ConfigMap-style mount: the file is a
//! symlink through `..data`, and a change swaps `..data` atomically (a
//! rename over it, as the kubelet does). Waits are on the registry's
//! version history with generous bounds, never on wall-clock durations.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

use resil::registry_crate::{VersionSource, VersionStatus};
use resil::Registry;

/// Counts the reload attempts logged for sources containing a text (the
/// attempts' one log line each), across every thread.
mod log_lines {
    use std::sync::{Mutex, OnceLock};

    use tracing::field::{Field, Visit};
    use tracing_subscriber::layer::{Context, SubscriberExt};
    use tracing_subscriber::Layer;

    static LINES: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

    #[derive(Default)]
    struct Fields {
        message: String,
        source: String,
    }

    impl Visit for Fields {
        fn record_str(&mut self, field: &Field, value: &str) {
            if field.name() == "source" {
                self.source = value.to_owned();
            }
        }
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.message = format!("{value:?}");
            }
        }
    }

    struct Count;

    impl<S: tracing::Subscriber> Layer<S> for Count {
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            let mut fields = Fields::default();
            event.record(&mut fields);
            if fields.message.starts_with("config reload") {
                LINES.lock().unwrap().push((fields.source, fields.message));
            }
        }
    }

    /// Installs the counter once per test binary.
    pub fn install() {
        static ONCE: OnceLock<()> = OnceLock::new();
        ONCE.get_or_init(|| {
            let subscriber = tracing_subscriber::registry().with(Count);
            tracing::subscriber::set_global_default(subscriber).unwrap();
        });
    }

    /// The attempts' lines whose source contains `text`.
    pub fn of(text: &str) -> Vec<String> {
        LINES
            .lock()
            .unwrap()
            .iter()
            .filter(|(source, _)| source.contains(text))
            .map(|(_, m)| m.clone())
            .collect()
    }
}

/// A generous bound for a reload on a busy machine (not a timing claim).
const PATIENCE: Duration = Duration::from_secs(60);

/// A ConfigMap volume: `dir/config.yaml -> ..data/config.yaml`,
/// `..data -> ..<generation>`.
struct ConfigMap {
    dir: PathBuf,
    generation: u32,
}

impl ConfigMap {
    fn new(test: &str, text: &str) -> ConfigMap {
        let dir = std::env::temp_dir().join(format!("resil-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let mut map = ConfigMap { dir, generation: 0 };
        map.write_generation(text);
        symlink(map.data_target(), map.dir.join("..data")).unwrap();
        symlink("..data/config.yaml", map.path()).unwrap();
        map
    }

    fn path(&self) -> PathBuf {
        self.dir.join("config.yaml")
    }

    fn data_target(&self) -> String {
        format!("..2026_12_07_{}", self.generation)
    }

    fn write_generation(&mut self, text: &str) {
        self.generation += 1;
        let target = self.dir.join(self.data_target());
        fs::create_dir(&target).unwrap();
        fs::write(target.join("config.yaml"), text).unwrap();
    }

    /// What the kubelet does: a new generation directory, `..data_tmp`
    /// pointing at it, renamed over `..data`, the old generation removed.
    fn update(&mut self, text: &str) {
        let old = self.dir.join(self.data_target());
        self.write_generation(text);
        let tmp = self.dir.join("..data_tmp");
        symlink(self.data_target(), &tmp).unwrap();
        fs::rename(&tmp, self.dir.join("..data")).unwrap();
        fs::remove_dir_all(old).unwrap();
    }
}

impl Drop for ConfigMap {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn window(size: u32) -> String {
    format!("resilience4j.circuitbreaker.instances.inventory:\n  sliding-window-size: {size}\n")
}

fn sources(registry: &Registry) -> Vec<(u64, bool)> {
    registry
        .config_versions()
        .iter()
        .map(|v| (v.id, v.status == VersionStatus::Applied))
        .collect()
}

fn file_source(path: &Path) -> VersionSource {
    VersionSource::File(path.to_path_buf())
}

#[test]
fn a_configmap_data_swap_applies_once_and_a_refused_file_keeps_the_previous_version() {
    log_lines::install();
    let mut map = ConfigMap::new("configmap-swap", &window(10));
    let registry = Registry::builder()
        .watch_config(true)
        .watch_debounce(Duration::from_millis(200))
        .build();
    registry.reload_file(map.path()).unwrap();
    assert_eq!(registry.watched_file(), Some(map.path()));
    let breaker = registry.circuit_breaker("inventory");
    assert_eq!(breaker.config().sliding_window_size(), 10);

    map.update(&window(20));
    assert!(
        registry.wait_for_config_version(2, PATIENCE),
        "{:?}",
        sources(&registry)
    );
    assert_eq!(breaker.config().sliding_window_size(), 20);
    assert_eq!(registry.active_config_version(), Some(2));
    let v2 = registry.config_versions().pop().unwrap();
    assert_eq!(v2.source, file_source(&map.path()));

    // A file with a typo: refused, listed with its problem, nothing changes.
    map.update("resilience4j.circuitbreaker.instances.inventory:\n  sliding-window-sise: 5\n");
    assert!(
        registry.wait_for_config_version(3, PATIENCE),
        "{:?}",
        sources(&registry)
    );
    let v3 = registry.config_versions().pop().unwrap();
    match &v3.status {
        VersionStatus::Refused(problems) => assert!(
            problems.iter().any(|p| p.contains("sliding-window-sise")
                && p.contains("did you mean `sliding-window-size`")),
            "{problems:?}"
        ),
        other => panic!("expected refused, got {other:?}"),
    }
    assert_eq!(
        breaker.config().sliding_window_size(),
        20,
        "the last good config stays"
    );
    assert_eq!(registry.active_config_version(), Some(2));

    // The fix applies; every attempt was counted once: the first load, the
    // swap, the refusal, the fix (no second reload of one swap).
    map.update(&window(30));
    assert!(
        registry.wait_for_config_version(4, PATIENCE),
        "{:?}",
        sources(&registry)
    );
    assert_eq!(breaker.config().sliding_window_size(), 30);
    assert_eq!(
        sources(&registry),
        [(1, true), (2, true), (3, false), (4, true)]
    );
    let reloads = registry.config_reloads();
    assert_eq!((reloads.applied, reloads.refused), (3, 1));
    let lines = log_lines::of(&map.dir.to_string_lossy());
    assert_eq!(lines.len(), 4, "one log line per attempt: {lines:#?}");
    assert!(lines[2].starts_with("config reload refused"), "{lines:#?}");
    let text = registry.prometheus_text();
    assert!(
        text.contains("resil_config_reloads_total{result=\"applied\"} 3"),
        "{text}"
    );
    assert!(
        text.contains("resil_config_reloads_total{result=\"refused\"} 1"),
        "{text}"
    );
}

#[test]
fn the_file_key_turns_the_watcher_on_and_a_plain_rewrite_is_seen_too() {
    let dir = std::env::temp_dir().join(format!("resil-watch-key-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("resil.yaml");
    let text = |size: u32| {
        format!(
            "resil.config.watch: true\nresil.config.watch-debounce: 100ms\n{}",
            window(size)
        )
    };
    fs::write(&path, text(10)).unwrap();
    let registry = Registry::new();
    registry.reload_file(&path).unwrap();
    assert_eq!(
        registry.watched_file(),
        Some(path.clone()),
        "the file asked"
    );

    // An editor's save: write a temporary file and rename it over.
    let tmp = dir.join(".resil.yaml.swp");
    fs::write(&tmp, text(15)).unwrap();
    fs::rename(&tmp, &path).unwrap();
    assert!(registry.wait_for_config_version(2, PATIENCE));
    assert_eq!(
        registry
            .circuit_breaker("inventory")
            .config()
            .sliding_window_size(),
        15
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_watch_key_is_refused_with_its_path() {
    let err = resil::config::FileConfig::from_yaml_str("resil.config.wach: true\n").unwrap_err();
    assert!(
        err.to_string().contains("resil.config.wach")
            && err.to_string().contains("did you mean `watch`"),
        "{err}"
    );
    let err =
        resil::config::FileConfig::from_yaml_str("resil.config.watch: sometimes\n").unwrap_err();
    assert!(err.to_string().contains("`true` or `false`"), "{err}");
}
