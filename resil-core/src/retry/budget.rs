//! A retry budget shared by retries, so stacked retries cannot multiply traffic.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{self, Clock, SharedClock, SystemClock};
use crate::error::ConfigError;

/// How many buckets a window is split into: expired retries and deposits leave
/// the balance one tenth of a window at a time.
const BUCKETS: usize = 10;
/// What one retry withdraws, in the budget's fixed-point units (a first attempt
/// deposits `retry_ratio · UNIT`).
const UNIT: i64 = 1000;

/// The settings of a [`RetryBudget`]; defaults are tower's `TpsBudget`'s.
///
/// Over any `window`, the retries allowed are
/// `retry_ratio × first attempts + min_retries_per_second × window`.
///
/// ```
/// use std::time::Duration;
/// use resil_core::retry::RetryBudgetConfig;
///
/// let config = RetryBudgetConfig::builder()
///     .retry_ratio(0.1)
///     .min_retries_per_second(1)
///     .window(Duration::from_secs(5))
///     .build()
///     .unwrap();
/// assert_eq!(config.retry_ratio(), 0.1);
///
/// let err = RetryBudgetConfig::builder().retry_ratio(-1.0).build().unwrap_err();
/// assert_eq!(err.field(), "retry_ratio");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryBudgetConfig {
    window: Duration,
    min_retries_per_second: u32,
    retry_ratio: f32,
}

impl RetryBudgetConfig {
    /// A builder starting from the defaults: a 10 s window, 10 retries per
    /// second as a floor, and retries up to 20 % of first attempts.
    pub fn builder() -> RetryBudgetConfigBuilder {
        RetryBudgetConfigBuilder {
            config: RetryBudgetConfig::default(),
        }
    }

    /// How long a deposit or a withdrawal counts (default 10 s).
    #[inline]
    pub fn window(&self) -> Duration {
        self.window
    }

    /// Retries allowed per second even without any first attempts to pay for
    /// them (default 10), so low traffic can still retry.
    #[inline]
    pub fn min_retries_per_second(&self) -> u32 {
        self.min_retries_per_second
    }

    /// Retries allowed per first attempt, on top of the floor (default 0.2).
    #[inline]
    pub fn retry_ratio(&self) -> f32 {
        self.retry_ratio
    }
}

impl Default for RetryBudgetConfig {
    fn default() -> Self {
        RetryBudgetConfig {
            window: Duration::from_secs(10),
            min_retries_per_second: 10,
            retry_ratio: 0.2,
        }
    }
}

/// Builds a [`RetryBudgetConfig`].
#[derive(Debug, Clone, Copy)]
#[must_use = "a builder does nothing until `.build()` is called"]
pub struct RetryBudgetConfigBuilder {
    config: RetryBudgetConfig,
}

impl RetryBudgetConfigBuilder {
    /// How long a deposit or a withdrawal counts; between 1 s and 60 s.
    pub fn window(mut self, window: Duration) -> Self {
        self.config.window = window;
        self
    }

    /// Retries allowed per second without first attempts to pay for them; at most 1 000 000.
    pub fn min_retries_per_second(mut self, min_retries_per_second: u32) -> Self {
        self.config.min_retries_per_second = min_retries_per_second;
        self
    }

    /// Retries allowed per first attempt; between 0.0 and 10.0.
    pub fn retry_ratio(mut self, retry_ratio: f32) -> Self {
        self.config.retry_ratio = retry_ratio;
        self
    }

    /// Checks every value, naming the first invalid field.
    pub fn build(self) -> Result<RetryBudgetConfig, ConfigError> {
        let c = self.config;
        if !(Duration::from_secs(1)..=Duration::from_secs(60)).contains(&c.window) {
            return Err(ConfigError::new(
                "window",
                format!("{:?}", c.window),
                "a duration between 1s and 60s",
            ));
        }
        if c.min_retries_per_second > 1_000_000 {
            return Err(ConfigError::new(
                "min_retries_per_second",
                c.min_retries_per_second,
                "an integer <= 1000000",
            ));
        }
        if !(0.0..=10.0).contains(&c.retry_ratio) {
            return Err(ConfigError::new(
                "retry_ratio",
                c.retry_ratio,
                "a ratio between 0.0 and 10.0",
            ));
        }
        Ok(c)
    }
}

/// A budget that caps retries to a ratio of first attempts plus a small floor,
/// over a sliding time window (beyond Resilience4j; modelled on tower's
/// `TpsBudget`).
///
/// Three stacked layers that each try three times send up to 27 requests to the
/// service at the bottom for every logical request (seed 002). Sharing one
/// budget between retries (clone the handle, it is an `Arc`) bounds the extra
/// traffic they may add together: every logical call *deposits* a fraction of a
/// retry, every retry *withdraws* a whole one, and a retry the balance cannot
/// pay for is refused. A [`Retry`](super::Retry) whose budget refuses a retry
/// ends the call at once with
/// [`Error::RetryBudgetExhausted`](crate::Error::RetryBudgetExhausted).
///
/// # Algorithm and limits
///
/// The window is split into 10 buckets on the injected clock. Each bucket is
/// one `AtomicU64` holding its epoch and its balance, updated by compare-and-swap,
/// so a deposit (paid on every call, also on the success path) takes no lock.
/// The balance is the sum of the live buckets plus the floor
/// (`min_retries_per_second × window`). Deposits and withdrawals leave it one
/// bucket (a tenth of the window) at a time, so the effective window is between
/// 0.9 and 1 × `window`. Withdrawing reads the balance and then subtracts, so
/// threads withdrawing at the same instant may overdraw it by at most one retry
/// each. Each bucket word holds the bucket's full epoch (the clock reading
/// divided by the bucket length, never truncated, so ages cannot wrap after a
/// long idle period or a clock jump) and its balance in the bits left over: a
/// bucket saturates at ±2²⁸ thousandths of a retry with the default 10 s
/// window (1.3 million first attempts per bucket at the default ratio),
/// ±2²⁵ with a 1 s window, ±2³¹ with a 60 s one.
///
/// ```
/// use std::time::Duration;
/// use resil_core::clock::ManualClock;
/// use resil_core::retry::{RetryBudget, RetryBudgetConfig};
///
/// let clock = ManualClock::new();
/// let config = RetryBudgetConfig::builder()
///     .min_retries_per_second(0)
///     .retry_ratio(0.5)
///     .build()
///     .unwrap();
/// let budget = RetryBudget::with_clock(config, clock.clone());
/// for _ in 0..4 {
///     budget.deposit(); // four calls pay for two retries
/// }
/// assert!(budget.withdraw());
/// assert!(budget.withdraw());
/// assert!(!budget.withdraw());
/// clock.advance(Duration::from_secs(10)); // the window has passed
/// assert_eq!(budget.available_retries(), 0);
/// ```
#[derive(Clone)]
pub struct RetryBudget {
    inner: Arc<Bank>,
}

struct Bank {
    config: RetryBudgetConfig,
    clock: SharedClock,
    /// Per bucket, one word: the bucket's epoch in the high bits, its balance
    /// (signed) in the low [`Packing::value_bits`].
    buckets: [AtomicU64; BUCKETS],
    packing: Packing,
    bucket_nanos: u64,
    deposit: i64,
    reserve: i64,
    /// Retries refused since the budget was made.
    refused: AtomicU64,
}

/// How a bucket's epoch and balance share one `u64`.
///
/// The epoch is the full clock reading divided by the bucket length, never
/// truncated: a bucket is at least 100 ms long (the window is at least 1 s), so
/// even a clock reading `u64::MAX` nanoseconds gives an epoch below 2³⁸. The
/// epoch gets exactly the bits its largest possible value needs, and the balance
/// the rest (26 bits for a 1 s window, 29 for the default 10 s, 32 for 60 s),
/// so ages are exact 64-bit differences and cannot wrap, whatever the clock
/// reads or jumps to.
#[derive(Clone, Copy)]
struct Packing {
    value_bits: u32,
}

impl Packing {
    fn for_bucket(bucket_nanos: u64) -> Self {
        let max_epoch = u64::MAX / bucket_nanos.max(1);
        let epoch_bits = u64::BITS - max_epoch.leading_zeros();
        Packing {
            value_bits: (u64::BITS - epoch_bits).min(32),
        }
    }

    /// The largest balance a bucket holds (the smallest is its negation).
    #[inline]
    fn max_value(self) -> i64 {
        (1i64 << (self.value_bits - 1)) - 1
    }

    #[inline]
    fn pack(self, epoch: u64, value: i64) -> u64 {
        debug_assert!(
            epoch >> (u64::BITS - self.value_bits) == 0,
            "an epoch always fits its bits: they were sized for the largest clock reading"
        );
        let mask = (1u64 << self.value_bits) - 1;
        (epoch << self.value_bits) | (value as u64 & mask)
    }

    #[inline]
    fn unpack(self, word: u64) -> (u64, i64) {
        let epoch_bits = u64::BITS - self.value_bits;
        let value = ((word << epoch_bits) as i64) >> epoch_bits; // sign-extended
        (word >> self.value_bits, value)
    }
}

/// How many epochs `stored` lies behind `now`; negative if it is ahead (another
/// thread read the clock later and already moved the bucket on). Exact: both
/// are below 2³⁸.
#[inline]
fn age(now: u64, stored: u64) -> i64 {
    now as i64 - stored as i64
}

impl RetryBudget {
    /// A budget on the system clock.
    pub fn new(config: RetryBudgetConfig) -> Self {
        Self::with_clock(config, SystemClock)
    }

    /// A budget reading `clock`.
    pub fn with_clock(config: RetryBudgetConfig, clock: impl Clock) -> Self {
        let window = clock::nanos(config.window).max(BUCKETS as u64);
        let bucket_nanos = window / BUCKETS as u64;
        let reserve =
            f64::from(config.min_retries_per_second) * config.window.as_secs_f64() * UNIT as f64;
        RetryBudget {
            inner: Arc::new(Bank {
                config,
                clock: SharedClock::new(clock),
                buckets: Default::default(),
                packing: Packing::for_bucket(bucket_nanos),
                bucket_nanos,
                deposit: (f64::from(config.retry_ratio) * UNIT as f64).round() as i64,
                reserve: reserve as i64,
                refused: AtomicU64::new(0),
            }),
        }
    }

    /// The budget's settings.
    #[inline]
    pub fn config(&self) -> &RetryBudgetConfig {
        &self.inner.config
    }

    /// Records a first attempt, which pays `retry_ratio` of a retry.
    #[inline]
    pub fn deposit(&self) {
        if self.inner.deposit != 0 {
            self.inner.add(self.inner.epoch(), self.inner.deposit);
        }
    }

    /// Takes one retry from the balance; `false` (and nothing taken) when the
    /// balance cannot pay for it.
    pub fn withdraw(&self) -> bool {
        let bank = &*self.inner;
        let epoch = bank.epoch();
        if bank.balance(epoch) < UNIT {
            bank.refused.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        bank.add(epoch, -UNIT);
        true
    }

    /// How many retries the balance would pay for now.
    pub fn available_retries(&self) -> u64 {
        let bank = &*self.inner;
        u64::try_from(bank.balance(bank.epoch()) / UNIT).unwrap_or(0)
    }

    /// Retries this budget refused since it was made.
    pub fn refused_retries(&self) -> u64 {
        self.inner.refused.load(Ordering::Relaxed)
    }

    /// Whether the budget holds nothing a fresh one would not: no deposit
    /// or withdrawal still inside the window. A keyed family evicts only
    /// such a budget, so a key cannot win its floor back by being evicted.
    pub(crate) fn is_at_rest(&self) -> bool {
        let bank = &*self.inner;
        let epoch = bank.epoch();
        bank.buckets
            .iter()
            .map(|b| bank.packing.unpack(b.load(Ordering::Acquire)))
            .all(|(stored, value)| value == 0 || age(epoch, stored) >= BUCKETS as i64)
    }
}

impl Bank {
    #[inline]
    fn epoch(&self) -> u64 {
        self.clock.now_nanos() / self.bucket_nanos
    }

    #[inline]
    fn bucket(&self, epoch: u64) -> &AtomicU64 {
        &self.buckets[(epoch % BUCKETS as u64) as usize]
    }

    fn add(&self, epoch: u64, amount: i64) {
        let packing = self.packing;
        let max = packing.max_value();
        let bucket = self.bucket(epoch);
        let mut word = bucket.load(Ordering::Relaxed);
        loop {
            let (stored, value) = packing.unpack(word);
            let next = if age(epoch, stored) > 0 {
                // The bucket holds an expired epoch: start it afresh.
                packing.pack(epoch, amount.clamp(-max, max))
            } else {
                packing.pack(stored, value.saturating_add(amount).clamp(-max, max))
            };
            match bucket.compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return,
                Err(actual) => word = actual,
            }
        }
    }

    fn balance(&self, epoch: u64) -> i64 {
        let live: i64 = self
            .buckets
            .iter()
            .map(|b| self.packing.unpack(b.load(Ordering::Acquire)))
            .filter(|&(stored, _)| age(epoch, stored) < BUCKETS as i64)
            .map(|(_, value)| value)
            .sum();
        live + self.reserve
    }
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("config", &self.inner.config)
            .field("available_retries", &self.available_retries())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn budget(min: u32, ratio: f32) -> (RetryBudget, ManualClock) {
        let clock = ManualClock::new();
        let config = RetryBudgetConfig::builder()
            .min_retries_per_second(min)
            .retry_ratio(ratio)
            .build()
            .unwrap();
        (RetryBudget::with_clock(config, clock.clone()), clock)
    }

    #[test]
    fn the_defaults_are_towers_tps_budget() {
        let config = RetryBudgetConfig::default();
        assert_eq!(config.window(), Duration::from_secs(10));
        assert_eq!(config.min_retries_per_second(), 10);
        assert_eq!(config.retry_ratio(), 0.2);
        let (budget, _) = budget(10, 0.2);
        assert_eq!(budget.available_retries(), 100, "10/s over 10 s");
    }

    #[test]
    fn invalid_values_are_rejected_naming_the_field() {
        let b = RetryBudgetConfig::builder;
        let cases = [
            (b().window(Duration::from_millis(999)).build(), "window"),
            (b().window(Duration::from_secs(61)).build(), "window"),
            (b().retry_ratio(f32::NAN).build(), "retry_ratio"),
            (b().retry_ratio(10.5).build(), "retry_ratio"),
            (
                b().min_retries_per_second(1_000_001).build(),
                "min_retries_per_second",
            ),
        ];
        for (result, field) in cases {
            assert_eq!(result.unwrap_err().field(), field);
        }
        assert_eq!(
            b().window(Duration::ZERO).build().unwrap_err().to_string(),
            "invalid `window`: got 0ns, expected a duration between 1s and 60s"
        );
    }

    #[test]
    fn each_first_attempt_pays_the_ratio_of_a_retry() {
        let (budget, _) = budget(0, 0.2);
        assert!(!budget.withdraw(), "nothing deposited, no floor");
        for _ in 0..10 {
            budget.deposit();
        }
        assert_eq!(budget.available_retries(), 2);
        assert!(budget.withdraw());
        assert!(budget.withdraw());
        assert!(!budget.withdraw());
        assert_eq!(budget.available_retries(), 0);
    }

    #[test]
    fn withdrawals_expire_with_the_window_so_the_floor_comes_back() {
        let (budget, clock) = budget(1, 0.0);
        assert_eq!(budget.available_retries(), 10);
        for _ in 0..10 {
            assert!(budget.withdraw());
        }
        assert!(!budget.withdraw());
        clock.advance(Duration::from_secs(9));
        assert!(!budget.withdraw(), "still inside the window");
        clock.advance(Duration::from_secs(1));
        assert_eq!(budget.available_retries(), 10);
    }

    #[test]
    fn deposits_leave_the_window_one_bucket_at_a_time() {
        let (budget, clock) = budget(0, 1.0);
        budget.deposit();
        clock.advance(Duration::from_secs(5));
        budget.deposit();
        assert_eq!(budget.available_retries(), 2);
        clock.advance(Duration::from_secs(5));
        assert_eq!(budget.available_retries(), 1, "the first deposit expired");
        clock.advance(Duration::from_secs(5));
        assert_eq!(budget.available_retries(), 0);
    }

    #[test]
    fn a_bucket_reused_after_an_idle_period_starts_from_zero() {
        let (budget, clock) = budget(0, 1.0);
        for _ in 0..3 {
            budget.deposit();
        }
        clock.advance(Duration::from_secs(100)); // same bucket index, ten windows later
        budget.deposit();
        assert_eq!(budget.available_retries(), 1);
    }

    // Issue 6, item 11: ages were 32-bit, so after 2³² buckets the withdrawals
    // of long ago counted as live again and the budget refused retries for good.
    #[test]
    fn withdrawals_of_long_ago_never_count_again_whatever_the_clock_jump() {
        for jump in [
            Duration::from_secs(1 << 32),       // exactly 2³² one-second buckets
            Duration::from_secs((1 << 32) + 3), // and a few buckets more
            Duration::from_secs(1 << 31),       // half-way: the old sign flip
            Duration::from_nanos(u64::MAX / 2),
        ] {
            let (budget, clock) = budget(1, 0.0);
            for _ in 0..10 {
                assert!(budget.withdraw());
            }
            assert!(!budget.withdraw(), "the floor is spent");
            clock.advance(jump);
            assert_eq!(budget.available_retries(), 10, "after {jump:?}");
            assert!(budget.withdraw(), "after {jump:?}");
        }
    }

    #[test]
    fn a_clock_reading_its_last_value_still_ages_buckets() {
        let (budget, clock) = budget(0, 1.0);
        budget.deposit();
        clock.set(Duration::from_nanos(u64::MAX - 1));
        assert_eq!(budget.available_retries(), 0, "the deposit expired");
        budget.deposit();
        budget.deposit();
        assert_eq!(budget.available_retries(), 2);
        assert!(budget.withdraw());
        assert_eq!(budget.available_retries(), 1);
    }

    #[test]
    fn the_packing_keeps_every_epoch_and_the_sign_of_every_balance() {
        for window_secs in [1, 10, 60] {
            let bucket = window_secs * 100_000_000;
            let p = Packing::for_bucket(bucket);
            let top = u64::MAX / bucket;
            for epoch in [0, 1, top / 2, top] {
                for value in [0, 1, -1, p.max_value(), -p.max_value()] {
                    assert_eq!(p.unpack(p.pack(epoch, value)), (epoch, value));
                }
            }
        }
        assert_eq!(Packing::for_bucket(100_000_000).value_bits, 26);
        assert_eq!(Packing::for_bucket(1_000_000_000).value_bits, 29);
        assert_eq!(Packing::for_bucket(6_000_000_000).value_bits, 32);
    }

    #[test]
    fn a_bucket_saturates_instead_of_wrapping() {
        let (budget, _) = budget(0, 10.0);
        let max = budget.inner.packing.max_value();
        for _ in 0..(max / 10_000 + 10) {
            budget.deposit();
        }
        assert_eq!(budget.available_retries(), (max / UNIT) as u64);
    }

    #[test]
    fn concurrent_deposits_all_count() {
        let (budget, _) = budget(0, 1.0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        budget.deposit();
                    }
                });
            }
        });
        assert_eq!(budget.available_retries(), 4000);
    }
}
