//! Time as the reference exposes it (epoch seconds, `f64`) and as storage keeps it (microseconds).
//! Backends use these through [`store`](crate::store).

use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch, now.
pub fn now_micros() -> i64 {
    // A clock before 1970 is a broken host; 0 keeps the arithmetic total.
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// Epoch seconds, now.
pub fn now_secs() -> f64 {
    micros_to_secs(now_micros())
}

/// Epoch microseconds → epoch seconds.
pub fn micros_to_secs(micros: i64) -> f64 {
    micros as f64 / 1e6
}

/// Epoch seconds → epoch microseconds, rounded to the nearest microsecond.
///
/// `None` for values that are not finite or do not fit (before year −290,000 or after +290,000).
pub fn secs_to_micros(secs: f64) -> Option<i64> {
    let micros = (secs * 1e6).round();
    (micros.is_finite() && micros.abs() < 9.0e18).then_some(micros as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_round_trip_through_seconds() {
        for micros in [0_i64, 1, 1_795_318_375_281_155, 4_102_444_800_000_001] {
            assert_eq!(secs_to_micros(micros_to_secs(micros)), Some(micros));
        }
    }

    #[test]
    fn rejects_non_finite() {
        assert_eq!(secs_to_micros(f64::NAN), None);
        assert_eq!(secs_to_micros(f64::INFINITY), None);
        assert_eq!(secs_to_micros(1e300), None);
    }
}
