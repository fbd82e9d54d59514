//! Time as the reference exposes it (epoch seconds, `f64`), as storage orders it (microseconds)
//! and as callers may give it (nanoseconds: [`Timestamp`]). Backends use these through
//! [`store`](crate::store).

use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, SecondsFormat, Utc};

const NANOS_PER_SEC: i64 = 1_000_000_000;

/// An instant to the nanosecond, in the range protobuf's `Timestamp` (and so Google's API)
/// allows: years 0001 to 9999. ADK-Rust's `DateTime<Utc>` carries the same; ADK for Go sends
/// its zero time, 0001-01-01, for an event it gave no time. An event keeps the time it was
/// given this exactly (see [`Event::time`](crate::Event::time)); ADK's float seconds are one view
/// of it.
///
/// ```
/// use agentstate::Timestamp;
/// let t = Timestamp::parse_rfc3339("2026-11-25T02:58:13.327913461Z")?;
/// assert_eq!(t.nanos() % 1_000_000_000, 327_913_461);
/// assert_eq!(t.rfc3339(), "2026-11-25T02:58:13.327913461Z");
/// // Any float seconds come back from their timestamp bit for bit.
/// let secs = 1_795_318_375.281_155_3_f64;
/// assert_eq!(Timestamp::from_secs(secs).unwrap().secs().to_bits(), secs.to_bits());
/// // Go's zero time.
/// assert_eq!(Timestamp::parse_rfc3339("0001-01-01T00:00:00Z")?.secs(), -62_135_596_800.0);
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i128);

/// 0001-01-01T00:00:00Z and the second after 9999-12-31T23:59:59Z, epoch seconds.
const FIRST_SEC: i64 = -62_135_596_800;
const END_SEC: i64 = 253_402_300_800;
const NANOS: i128 = NANOS_PER_SEC as i128;

impl Timestamp {
    /// 0001-01-01T00:00:00Z, the first instant.
    pub const MIN: Self = Self(FIRST_SEC as i128 * NANOS);
    /// 9999-12-31T23:59:59.999999999Z, the last instant.
    pub const MAX: Self = Self(END_SEC as i128 * NANOS - 1);

    /// Epoch nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Self {
        Self(nanos as i128)
    }

    /// Epoch microseconds.
    pub const fn from_micros(micros: i64) -> Self {
        Self(micros as i128 * 1000)
    }

    /// Epoch seconds as an instant: the whole microsecond the float stands for when there is
    /// one (a float is 238 ns coarse today, so `1795318375.281155` is really `…281155109`: it
    /// means `…281155`), else the nanosecond nearest it. Either way [`secs`](Self::secs) gives
    /// the float back. `None` for values that are not finite or outside the years 0001 to 9999.
    /// Whole seconds and the fraction are taken apart first, so no precision is lost to a
    /// product's rounding.
    pub fn from_secs(secs: f64) -> Option<Self> {
        if !secs.is_finite() || secs < FIRST_SEC as f64 || secs >= END_SEC as f64 {
            return None;
        }
        let whole = secs.floor();
        // Exact: `whole` is `secs` without its fraction, and both are below 2^53.
        let fraction = secs - whole;
        let whole = whole as i128 * NANOS;
        let micros = Self(whole + (fraction * 1e6).round() as i128 * 1000);
        if micros.secs() == secs {
            return Some(micros);
        }
        Some(Self(whole + (fraction * 1e9).round() as i128))
    }

    /// [`from_secs`](Self::from_secs) for an argument: the error names `field`.
    pub fn try_from_secs(field: &'static str, secs: f64) -> crate::Result<Self> {
        Self::from_secs(secs)
            .ok_or_else(|| crate::Error::invalid(field, format!("{secs} is not a valid epoch time in seconds")))
    }

    /// Epoch nanoseconds, saturating outside the years 1677 to 2262 (what an `i64` holds); the
    /// other views hold every instant.
    pub fn nanos(self) -> i64 {
        i64::try_from(self.0).unwrap_or(if self.0 < 0 { i64::MIN } else { i64::MAX })
    }

    /// The instant `delta` nanoseconds later (earlier when negative).
    #[must_use]
    pub const fn plus_nanos(self, delta: i64) -> Self {
        Self(self.0 + delta as i128)
    }

    /// Epoch microseconds, to the nearest (a half up): the microsecond storage keeps the
    /// instant at, as ADK for Python's databases round a time to their columns.
    pub fn micros(self) -> i64 {
        // Within the years 0001 to 9999 the quotient fits an i64 many times over.
        i64::try_from((self.0 + 500).div_euclid(1000)).unwrap_or(if self.0 < 0 { i64::MIN } else { i64::MAX })
    }

    /// Epoch seconds, the float nearest the instant. A float that came from
    /// [`from_secs`](Self::from_secs) comes back bit for bit (any whose spacing is over 1 ns:
    /// every time since April 1970).
    pub fn secs(self) -> f64 {
        self.0.div_euclid(NANOS) as f64 + self.0.rem_euclid(NANOS) as f64 / 1e9
    }

    /// Whether the instant is a whole microsecond.
    pub const fn is_whole_micros(self) -> bool {
        self.0 % 1000 == 0
    }

    /// RFC 3339, UTC, with the digits the instant has: to the microsecond (six digits), or
    /// to the nanosecond (nine) when it has a finer part.
    pub fn rfc3339(self) -> String {
        let format = if self.is_whole_micros() { SecondsFormat::Micros } else { SecondsFormat::Nanos };
        self.date_time().to_rfc3339_opts(format, true)
    }

    /// A chrono time as an instant (`None` outside the years 0001 to 9999).
    pub fn from_date_time(time: DateTime<Utc>) -> Option<Self> {
        let secs = time.timestamp();
        (FIRST_SEC..END_SEC)
            .contains(&secs)
            .then(|| Self(i128::from(secs) * NANOS + i128::from(time.timestamp_subsec_nanos())))
    }

    /// The instant as a chrono time (every `Timestamp` is one).
    pub fn date_time(self) -> DateTime<Utc> {
        let secs = i64::try_from(self.0.div_euclid(NANOS)).unwrap_or_default();
        let nanos = u32::try_from(self.0.rem_euclid(NANOS)).unwrap_or_default();
        DateTime::from_timestamp(secs, nanos).unwrap_or_default()
    }

    /// An RFC 3339 time (`Z` or an offset, any fraction to the nanosecond). The error says why
    /// the text is not one.
    pub fn parse_rfc3339(text: &str) -> Result<Self, String> {
        let time =
            DateTime::parse_from_rfc3339(text.trim()).map_err(|e| format!("{text:?} is not an RFC 3339 time ({e})"))?;
        Self::from_date_time(time.to_utc()).ok_or_else(|| format!("{text:?} is outside the years 0001 to 9999"))
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
        assert!(Timestamp::parse_rfc3339("+10000-01-01T00:00:00Z").is_err());
        // protobuf's range, Go's zero time included.
        let first = Timestamp::parse_rfc3339("0001-01-01T00:00:00Z").unwrap();
        assert_eq!((first.secs(), first.rfc3339().as_str()), (-62_135_596_800.0, "0001-01-01T00:00:00.000000Z"));
        assert_eq!(Timestamp::from_secs(first.secs()), Some(first));
        assert_eq!(first.micros(), -62_135_596_800_000_000);
        let last = Timestamp::parse_rfc3339("9999-12-31T23:59:59.999999999Z").unwrap();
        assert_eq!(last.rfc3339(), "9999-12-31T23:59:59.999999999Z");
        assert_eq!(Timestamp::parse_rfc3339("2300-01-01T00:00:00Z").unwrap().rfc3339(), "2300-01-01T00:00:00.000000Z");
        assert_eq!(Timestamp::from_secs(-62_135_596_801.0), None);
    }

    #[test]
    fn rejects_non_finite() {
        assert_eq!(Timestamp::from_secs(f64::NAN), None);
        assert_eq!(Timestamp::from_secs(3e11), None);
        assert_eq!(secs_to_micros(f64::NAN), None);
        assert_eq!(secs_to_micros(f64::INFINITY), None);
        assert_eq!(secs_to_micros(1e300), None);
    }
}
