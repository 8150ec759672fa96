//! A `metrics` recorder for tests: remembers the last value of every key,
//! rendered `name{label=value,…}` with the labels sorted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString,
    Unit,
};

/// A recorder that remembers the last value of every key, rendered
/// `name{label=value,…}` with labels sorted.
#[derive(Default, Clone)]
pub struct Remember(Arc<Mutex<HashMap<String, f64>>>);

struct Cell(String, Arc<Mutex<HashMap<String, f64>>>, AtomicU64);

impl CounterFn for Cell {
    fn increment(&self, v: u64) {
        let n = self.2.fetch_add(v, Ordering::SeqCst) + v;
        self.1.lock().unwrap().insert(self.0.clone(), n as f64);
    }
    fn absolute(&self, v: u64) {
        self.2.store(v, Ordering::SeqCst);
        self.1.lock().unwrap().insert(self.0.clone(), v as f64);
    }
}

impl GaugeFn for Cell {
    fn increment(&self, _: f64) {}
    fn decrement(&self, _: f64) {}
    fn set(&self, v: f64) {
        self.1.lock().unwrap().insert(self.0.clone(), v);
    }
}

impl Remember {
    fn cell(&self, key: &Key) -> Arc<Cell> {
        let mut labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        labels.sort();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        Arc::new(Cell(name, Arc::clone(&self.0), AtomicU64::new(0)))
    }

    pub fn get(&self, key: &str) -> Option<f64> {
        self.0.lock().unwrap().get(key).copied()
    }
}

impl Recorder for Remember {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.cell(key))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.cell(key))
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}
