//! The machine's CPU usage and load, as a container sees them.
//!
//! CPU usage is read from cgroup v2 when the process runs in one (every
//! container runtime and systemd today): `cpu.stat`'s `usage_usec` over the
//! CPUs `cpu.max` allows (`quota / period`, or every CPU when it says
//! `max`), so a container limited to half a CPU is at 100 % when it uses
//! half a CPU, whatever the host does. Without cgroup v2 it falls back to
//! `/proc/stat` (the whole machine's busy time). Load is `/proc/loadavg`'s
//! 1-minute figure (the host's: Linux does not keep a load per cgroup).

use std::path::PathBuf;

/// Where the readings come from (overridable for tests).
#[derive(Debug, Clone)]
pub struct SystemSampler {
    cgroup: PathBuf,
    proc_stat: PathBuf,
    loadavg: PathBuf,
    cpus: f64,
    last: Option<Last>,
}

#[derive(Debug, Clone, Copy)]
enum Last {
    /// cgroup v2: CPU time used (µs) at a reading of the clock (ns).
    Cgroup { usage_usec: u64, at: u64 },
    /// `/proc/stat`: busy and total jiffies.
    Proc { busy: u64, total: u64 },
}

/// One reading.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SystemReading {
    /// CPU usage in percent of what the process may use, since the previous
    /// sample (`None` on the first, or when nothing could be read).
    pub cpu_usage: Option<f64>,
    /// The 1-minute load average.
    pub load: Option<f64>,
}

impl Default for SystemSampler {
    fn default() -> Self {
        Self::new()
    }
}

impl SystemSampler {
    /// Reads `/sys/fs/cgroup`, `/proc/stat` and `/proc/loadavg`.
    pub fn new() -> Self {
        Self::with_paths("/sys/fs/cgroup", "/proc/stat", "/proc/loadavg")
    }

    /// Reads the cgroup v2 directory `cgroup` (its `cpu.stat` and `cpu.max`)
    /// and the given `/proc` files instead (tests point these at files of
    /// their own).
    pub fn with_paths(
        cgroup: impl Into<PathBuf>,
        proc_stat: impl Into<PathBuf>,
        loadavg: impl Into<PathBuf>,
    ) -> Self {
        SystemSampler {
            cgroup: cgroup.into(),
            proc_stat: proc_stat.into(),
            loadavg: loadavg.into(),
            cpus: std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64),
            last: None,
        }
    }

    /// The CPUs a `cpu.max` of `max` stands for on a machine of `cpus`.
    fn allowed_cpus(&self) -> f64 {
        let text = std::fs::read_to_string(self.cgroup.join("cpu.max")).unwrap_or_default();
        let mut parts = text.split_whitespace();
        match (
            parts.next(),
            parts.next().and_then(|p| p.parse::<f64>().ok()),
        ) {
            (Some(quota), Some(period)) if period > 0.0 => quota
                .parse::<f64>()
                .map_or(self.cpus, |q| (q / period).min(self.cpus)),
            _ => self.cpus,
        }
    }

    /// Samples at clock reading `now` (nanoseconds; cgroup usage is divided
    /// by the time since the previous sample).
    pub fn sample(&mut self, now: u64) -> SystemReading {
        let load = std::fs::read_to_string(&self.loadavg)
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok());
        let cpu_usage = if let Some(usage_usec) = self.cgroup_usage() {
            let cpus = self.allowed_cpus();
            let usage = match self.last {
                Some(Last::Cgroup { usage_usec: u0, at }) if now > at && cpus > 0.0 => {
                    let used = usage_usec.saturating_sub(u0) as f64 * 1_000.0;
                    Some((used / ((now - at) as f64 * cpus) * 100.0).min(100.0))
                }
                _ => None,
            };
            self.last = Some(Last::Cgroup {
                usage_usec,
                at: now,
            });
            usage
        } else if let Some((busy, total)) = self.proc_stat() {
            let usage = match self.last {
                Some(Last::Proc {
                    busy: b0,
                    total: t0,
                }) if total > t0 => {
                    Some(busy.saturating_sub(b0) as f64 / (total - t0) as f64 * 100.0)
                }
                _ => None,
            };
            self.last = Some(Last::Proc { busy, total });
            usage
        } else {
            None
        };
        SystemReading { cpu_usage, load }
    }

    fn cgroup_usage(&self) -> Option<u64> {
        let text = std::fs::read_to_string(self.cgroup.join("cpu.stat")).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("usage_usec "))
            .and_then(|v| v.trim().parse().ok())
    }

    fn proc_stat(&self) -> Option<(u64, u64)> {
        let text = std::fs::read_to_string(&self.proc_stat).ok()?;
        let line = text.lines().find(|l| l.starts_with("cpu "))?;
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|f| f.parse().ok())
            .collect();
        let total: u64 = fields.iter().take(8).sum();
        // idle + iowait are not busy.
        let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
        Some((total.saturating_sub(idle), total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("resil-system-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn cgroup_usage_is_measured_against_the_container_s_quota() {
        let d = dir("cgroup");
        std::fs::write(d.join("cpu.max"), "50000 100000\n").unwrap();
        std::fs::write(d.join("cpu.stat"), "usage_usec 1000000\nuser_usec 1\n").unwrap();
        std::fs::write(d.join("loadavg"), "3.50 2.00 1.00 1/100 42\n").unwrap();
        let mut s = SystemSampler::with_paths(&d, d.join("none"), d.join("loadavg"));
        s.cpus = 4.0;
        let first = s.sample(0);
        assert_eq!(
            first,
            SystemReading {
                cpu_usage: None,
                load: Some(3.5)
            }
        );
        // 0.4 s of CPU in 1 s, with half a CPU allowed: 80 %.
        std::fs::write(d.join("cpu.stat"), "usage_usec 1400000\n").unwrap();
        let r = s.sample(1_000_000_000);
        assert!((r.cpu_usage.unwrap() - 80.0).abs() < 1e-9, "{r:?}");
        // `max`: every CPU of the machine (4): 0.4 s in 1 s is 10 %.
        std::fs::write(d.join("cpu.max"), "max 100000\n").unwrap();
        std::fs::write(d.join("cpu.stat"), "usage_usec 1800000\n").unwrap();
        let r = s.sample(2_000_000_000);
        assert!((r.cpu_usage.unwrap() - 10.0).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn without_cgroup_v2_proc_stat_gives_the_machine_s_usage() {
        let d = dir("proc");
        std::fs::write(
            d.join("stat"),
            "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3\n",
        )
        .unwrap();
        let mut s = SystemSampler::with_paths(d.join("no-cgroup"), d.join("stat"), d.join("none"));
        assert_eq!(s.sample(0), SystemReading::default());
        // +300 busy, +100 idle: 75 %.
        std::fs::write(d.join("stat"), "cpu  250 0 250 800 100 0 0 0 0 0\n").unwrap();
        let r = s.sample(1);
        assert_eq!(r.cpu_usage, Some(75.0));
        assert_eq!(r.load, None);
    }
}
