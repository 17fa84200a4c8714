//! Pure: `metav1.Duration` — Go's `time.ParseDuration` syntax (`1m30s`,
//! `100ms`, `-1.5h`, `0`) both ways, as the config file spells durations.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A signed duration in nanoseconds, written as Go writes it (`1m0s`).
///
/// ```
/// use actlet::kubelet_config_file::GoDuration;
/// let d: GoDuration = "1m30s".parse().unwrap();
/// assert_eq!(d.to_string(), "1m30s");
/// assert_eq!(d.to_std(), Some(std::time::Duration::from_secs(90)));
/// assert!("-2s".parse::<GoDuration>().unwrap().to_std().is_none());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoDuration(pub i64);

impl GoDuration {
    /// Whole seconds.
    pub const fn secs(s: i64) -> Self {
        Self(s * 1_000_000_000)
    }

    /// Milliseconds.
    pub const fn millis(ms: i64) -> Self {
        Self(ms * 1_000_000)
    }

    /// The std duration, `None` when negative.
    pub fn to_std(self) -> Option<Duration> {
        u64::try_from(self.0).ok().map(Duration::from_nanos)
    }

    /// From a std duration (saturating).
    pub fn from_std(d: Duration) -> Self {
        Self(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }

    /// Zero (Go's "unset" for a non-pointer duration).
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }
}

const UNITS: &[(&str, f64)] = &[
    ("ns", 1.0),
    ("us", 1e3),
    ("µs", 1e3),
    ("μs", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
    ("m", 60e9),
    ("h", 3600e9),
];

impl std::str::FromStr for GoDuration {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("time: invalid duration {s:?}");
        let (neg, mut rest) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        if rest == "0" {
            return Ok(Self(0));
        }
        if rest.is_empty() {
            return Err(bad());
        }
        let mut total = 0f64;
        while !rest.is_empty() {
            let num_len = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .ok_or_else(|| format!("time: missing unit in duration {s:?}"))?;
            if num_len == 0 {
                return Err(bad());
            }
            let value: f64 = rest[..num_len].parse().map_err(|_| bad())?;
            rest = &rest[num_len..];
            let unit_len = rest
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(rest.len());
            let unit = &rest[..unit_len];
            let scale = UNITS
                .iter()
                .find(|(u, _)| *u == unit)
                .map(|(_, f)| *f)
                .ok_or_else(|| format!("time: unknown unit {unit:?} in duration {s:?}"))?;
            total += value * scale;
            rest = &rest[unit_len..];
        }
        if total > i64::MAX as f64 {
            return Err(format!("time: invalid duration {s:?}"));
        }
        let nanos = total.round() as i64;
        Ok(Self(if neg { -nanos } else { nanos }))
    }
}

/// Go's `Duration.String()`: `1h2m3s`, `1m0s`, `1.5s`, `100ms`, `0s`.
impl fmt::Display for GoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neg = self.0 < 0;
        let n = self.0.unsigned_abs();
        let sign = if neg { "-" } else { "" };
        if n == 0 {
            return f.write_str("0s");
        }
        if n < 1_000_000_000 {
            let (unit, div) = if n < 1_000 {
                ("ns", 1)
            } else if n < 1_000_000 {
                ("µs", 1_000)
            } else {
                ("ms", 1_000_000)
            };
            return write!(f, "{sign}{}{unit}", frac(n, div));
        }
        let h = n / 3_600_000_000_000;
        let m = (n / 60_000_000_000) % 60;
        let s_nanos = n % 60_000_000_000;
        let secs = frac(s_nanos, 1_000_000_000);
        if h > 0 {
            write!(f, "{sign}{h}h{m}m{secs}s")
        } else if m > 0 {
            write!(f, "{sign}{m}m{secs}s")
        } else {
            write!(f, "{sign}{secs}s")
        }
    }
}

/// `n / div` with the fraction's trailing zeros dropped (`1500, 1000` → `1.5`).
fn frac(n: u64, div: u64) -> String {
    let whole = n / div;
    let rem = n % div;
    if rem == 0 {
        return whole.to_string();
    }
    let width = div.ilog10() as usize;
    let digits = format!("{rem:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_syntax() {
        for (s, nanos) in [
            ("0", 0),
            ("0s", 0),
            ("20s", 20_000_000_000),
            ("1m30s", 90_000_000_000),
            ("2h45m", 9_900_000_000_000),
            ("100ms", 100_000_000),
            ("1.5s", 1_500_000_000),
            ("-1s", -1_000_000_000),
            ("10us", 10_000),
            ("3µs", 3_000),
        ] {
            assert_eq!(s.parse::<GoDuration>(), Ok(GoDuration(nanos)), "{s}");
        }
        for bad in ["", "1", "s", "1x", "abc", "1m3", "--1s"] {
            assert!(bad.parse::<GoDuration>().is_err(), "{bad}");
        }
    }

    #[test]
    fn prints_like_go() {
        for (nanos, s) in [
            (0, "0s"),
            (60_000_000_000, "1m0s"),
            (90_000_000_000, "1m30s"),
            (7_200_000_000_000, "2h0m0s"),
            (100_000_000, "100ms"),
            (1_500_000_000, "1.5s"),
            (-20_000_000_000, "-20s"),
            (14_400_000_000_000, "4h0m0s"),
        ] {
            assert_eq!(GoDuration(nanos).to_string(), s);
            assert_eq!(s.parse::<GoDuration>().unwrap(), GoDuration(nanos), "round trip {s}");
        }
    }
}
