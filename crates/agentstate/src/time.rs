//! Time as the reference exposes it (epoch seconds, `f64`), as storage orders it (microseconds)
//! and as callers may give it (nanoseconds: [`Timestamp`]). Backends use these through
//! [`store`](crate::store).

use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, SecondsFormat, Utc};

const NANOS_PER_SEC: i64 = 1_000_000_000;

/// An instant to the nanosecond: epoch nanoseconds, as protobuf's `Timestamp` and ADK-Rust's
/// `DateTime<Utc>` carry it. An event keeps the time it was given this exactly (see
/// [`Event::time`](crate::Event::time)); ADK's float seconds are one view of it.
///
/// ```
/// use agentstate::Timestamp;
/// let t = Timestamp::parse_rfc3339("2026-11-25T02:58:13.327913461Z")?;
/// assert_eq!(t.nanos() % 1_000_000_000, 327_913_461);
/// assert_eq!(t.rfc3339(), "2026-11-25T02:58:13.327913461Z");
/// // Any float seconds come back from their timestamp bit for bit.
/// let secs = 1_795_318_375.281_155_3_f64;
/// assert_eq!(Timestamp::from_secs(secs).unwrap().secs().to_bits(), secs.to_bits());
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// Epoch nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Self {
        Self(nanos)
    }

    /// Epoch microseconds (saturating past year 2262).
    pub const fn from_micros(micros: i64) -> Self {
        Self(micros.saturating_mul(1000))
    }

    /// Epoch seconds as an instant: the whole microsecond the float stands for when there is
    /// one (a float is 238 ns coarse today, so `1795318375.281155` is really `…281155109`: it
    /// means `…281155`), else the nanosecond nearest it. Either way [`secs`](Self::secs) gives
    /// the float back. `None` for values that are not finite or do not fit (before 1677 or
    /// after 2262). Whole seconds and the fraction are taken apart first, so no precision is
    /// lost to a product's rounding.
    pub fn from_secs(secs: f64) -> Option<Self> {
        const LIMIT: f64 = 9.2e9;
        if !secs.is_finite() || secs.abs() >= LIMIT {
            return None;
        }
        let whole = secs.floor();
        // Exact: `whole` is `secs` without its fraction, and both are below 2^53.
        let fraction = secs - whole;
        let whole = (whole as i64).saturating_mul(NANOS_PER_SEC);
        let micros = Self(whole.saturating_add((fraction * 1e6).round() as i64 * 1000));
        if micros.secs() == secs {
            return Some(micros);
        }
        Some(Self(whole.saturating_add((fraction * 1e9).round() as i64)))
    }

    /// [`from_secs`](Self::from_secs) for an argument: the error names `field`.
    pub fn try_from_secs(field: &'static str, secs: f64) -> crate::Result<Self> {
        Self::from_secs(secs)
            .ok_or_else(|| crate::Error::invalid(field, format!("{secs} is not a valid epoch time in seconds")))
    }

    /// Epoch nanoseconds.
    pub const fn nanos(self) -> i64 {
        self.0
    }

    /// Epoch microseconds, to the nearest (a half up): the microsecond storage keeps the
    /// instant at, as ADK for Python's databases round a time to their columns.
    pub const fn micros(self) -> i64 {
        self.0.saturating_add(500).div_euclid(1000)
    }

    /// Epoch seconds, the float nearest the instant. A float that came from
    /// [`from_secs`](Self::from_secs) comes back bit for bit (any whose spacing is over 1 ns:
    /// every time since April 1970).
    pub fn secs(self) -> f64 {
        self.0.div_euclid(NANOS_PER_SEC) as f64 + self.0.rem_euclid(NANOS_PER_SEC) as f64 / 1e9
    }

    /// Whether the instant is a whole microsecond.
    pub const fn is_whole_micros(self) -> bool {
        self.0 % 1000 == 0
    }

    /// RFC 3339, UTC, with the digits the instant has: to the microsecond (six digits), or
    /// to the nanosecond (nine) when it has a finer part.
    pub fn rfc3339(self) -> String {
        let format = if self.is_whole_micros() { SecondsFormat::Micros } else { SecondsFormat::Nanos };
        DateTime::<Utc>::from_timestamp_nanos(self.0).to_rfc3339_opts(format, true)
    }

    /// An RFC 3339 time (`Z` or an offset, any fraction to the nanosecond). The error says why
    /// the text is not one.
    pub fn parse_rfc3339(text: &str) -> Result<Self, String> {
        let time =
            DateTime::parse_from_rfc3339(text.trim()).map_err(|e| format!("{text:?} is not an RFC 3339 time ({e})"))?;
        time.timestamp_nanos_opt().map(Self).ok_or_else(|| format!("{text:?} is outside the years 1677 to 2262"))
    }
}

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
    fn float_seconds_come_back_bit_for_bit() {
        // Floats of times now (spacing ~238 ns), of whole microseconds, and of halves.
        let mut secs = 1_795_318_375.281_155_3_f64;
        for _ in 0..10_000 {
            let back = Timestamp::from_secs(secs).unwrap().secs();
            assert_eq!(back.to_bits(), secs.to_bits(), "{secs}");
            secs = f64::from_bits(secs.to_bits() + 7_919);
        }
        // A float of a whole microsecond stands for it, whichever side of it the float falls.
        for micros in [0_i64, 1, -1, 1_795_318_375_281_155, 1_795_318_375_281_156, 4_102_444_800_000_001] {
            let t = Timestamp::from_secs(micros_to_secs(micros)).unwrap();
            assert_eq!((t.micros(), t.is_whole_micros()), (micros, true));
        }
        // A finer time keeps its nanoseconds to the float's precision.
        let fine = Timestamp::from_secs(1_795_318_375.281_155_5).unwrap();
        assert!(!fine.is_whole_micros() && fine.micros() == 1_795_318_375_281_156, "{fine:?}");
    }

    #[test]
    fn nanoseconds_survive_text_and_round_to_microseconds() {
        let t = Timestamp::parse_rfc3339("2026-11-25T02:58:13.327913461Z").unwrap();
        assert_eq!(t.rfc3339(), "2026-11-25T02:58:13.327913461Z");
        assert_eq!(t.micros() % 1_000_000, 327_913);
        assert_eq!(Timestamp::from_nanos(1_500).micros(), 2);
        assert_eq!(Timestamp::from_nanos(1_499).micros(), 1);
        assert_eq!(Timestamp::from_nanos(-501).micros(), -1);
        assert_eq!(Timestamp::parse_rfc3339("2026-11-25T02:58:13Z").unwrap().rfc3339(), "2026-11-25T02:58:13.000000Z");
        assert_eq!(
            Timestamp::parse_rfc3339("2026-11-25T03:58:13.5+01:00").unwrap(),
            Timestamp::parse_rfc3339("2026-11-25T02:58:13.500Z").unwrap()
        );
        assert!(Timestamp::parse_rfc3339("2026-11-25 02:58").unwrap_err().contains("not an RFC 3339 time"));
        assert!(Timestamp::parse_rfc3339("2300-01-01T00:00:00Z").unwrap_err().contains("1677 to 2262"));
    }

    #[test]
    fn rejects_non_finite() {
        assert_eq!(Timestamp::from_secs(f64::NAN), None);
        assert_eq!(Timestamp::from_secs(1e10), None);
        assert_eq!(secs_to_micros(f64::NAN), None);
        assert_eq!(secs_to_micros(f64::INFINITY), None);
        assert_eq!(secs_to_micros(1e300), None);
    }
}
