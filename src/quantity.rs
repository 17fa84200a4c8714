//! Resource quantities (`500m`, `1`, `128Mi`, `1G`, `1e3`) parsed into exact
//! numbers.
//!
//! k8s-openapi's [`Quantity`] is only the string; this module is the small
//! parser the kubelet needs. It follows upstream `resource.ParseQuantity`'s
//! grammar:
//!
//! ```text
//! <quantity> ::= <signedNumber><suffix>
//! <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei          (binary SI)
//!              | n | u | m | "" | k | M | G | T | P | E (decimal SI)
//!              | e<signedNumber> | E<signedNumber>   (decimal exponent)
//! ```
//!
//! Values are kept in nano-units (`i128`), which holds every quantity the
//! kubelet meets exactly; finer fractions round up, as upstream rounds up when
//! scaling (`Value()` and `MilliValue()` are ceilings).

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// A quantity string that is not a valid Kubernetes quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {0:?}")]
pub struct QuantityError(pub String);

/// A parsed quantity, exact to the nano-unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ParsedQuantity {
    nanos: i128,
}

const NANOS_PER_UNIT: i128 = 1_000_000_000;

impl ParsedQuantity {
    /// Zero.
    pub const ZERO: Self = Self { nanos: 0 };

    /// Parses a quantity string such as `500m`, `1.5Gi` or `1e3`.
    pub fn parse(input: &str) -> Result<Self, QuantityError> {
        let err = || QuantityError(input.to_string());
        let s = input.trim();
        let (negative, rest) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            Some(_) => (false, s),
            None => return Err(err()),
        };
        let num_len = rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
        let (number, suffix) = rest.split_at(num_len);
        let (mantissa, frac_digits) = parse_decimal(number).ok_or_else(err)?;
        let nanos = scale(mantissa, frac_digits, suffix).ok_or_else(err)?;
        Ok(Self {
            nanos: if negative { -nanos } else { nanos },
        })
    }

    /// Parses a k8s-openapi [`Quantity`].
    pub fn from_quantity(q: &Quantity) -> Result<Self, QuantityError> {
        Self::parse(&q.0)
    }

    /// Builds a quantity from whole units.
    pub fn from_units(units: i64) -> Self {
        Self {
            nanos: i128::from(units) * NANOS_PER_UNIT,
        }
    }

    /// Builds a quantity from milli-units.
    pub fn from_milli(milli: i64) -> Self {
        Self {
            nanos: i128::from(milli) * 1_000_000,
        }
    }

    /// The value in whole units, rounded up (upstream `Quantity.Value()`),
    /// saturating at the `i64` range.
    pub fn value(&self) -> i64 {
        saturate(ceil_div(self.nanos, NANOS_PER_UNIT))
    }

    /// The value in milli-units, rounded up (upstream `Quantity.MilliValue()`).
    pub fn milli_value(&self) -> i64 {
        saturate(ceil_div(self.nanos, 1_000_000))
    }

    /// The exact value in nano-units.
    pub fn nanos(&self) -> i128 {
        self.nanos
    }

    /// True for zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// Sum of two quantities (saturating).
    pub fn saturating_add(self, other: Self) -> Self {
        Self {
            nanos: self.nanos.saturating_add(other.nanos),
        }
    }
}

/// Parses `digits[.digits]` into (all digits as an integer, digits after the dot).
fn parse_decimal(number: &str) -> Option<(i128, u32)> {
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if (int_part.is_empty() && frac_part.is_empty()) || frac_part.contains('.') {
        return None;
    }
    let mut mantissa: i128 = 0;
    for b in int_part.bytes().chain(frac_part.bytes()) {
        mantissa = mantissa.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
    }
    Some((mantissa, u32::try_from(frac_part.len()).ok()?))
}

/// `mantissa · 10^-frac_digits · suffix` in nano-units, rounded up.
fn scale(mantissa: i128, frac_digits: u32, suffix: &str) -> Option<i128> {
    let (binary_shift, exp10): (u32, i64) = match suffix {
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "" => (0, 0),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        _ => {
            let exp = suffix.strip_prefix(['e', 'E'])?;
            let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (0, exp.parse::<i64>().ok()?)
        }
    };
    let value = mantissa.checked_mul(1i128.checked_shl(binary_shift)?)?;
    let exponent = 9 + exp10 - i64::from(frac_digits);
    if exponent >= 0 {
        value.checked_mul(10i128.checked_pow(u32::try_from(exponent).ok()?)?)
    } else {
        match 10i128.checked_pow(u32::try_from(-exponent).ok()?) {
            Some(div) => Some(ceil_div(value, div)),
            // Smaller than one nano-unit: rounds up to one (or zero).
            None => Some(i128::from(value > 0)),
        }
    }
}

/// Whether a quantity string uses a binary-SI suffix (`Ki` … `Ei`): upstream
/// keeps that format when it prints the value again.
pub fn is_binary_si(s: &str) -> bool {
    s.trim().ends_with('i')
}

/// A whole number of units printed as upstream's `Quantity.String()` prints
/// a canonical integer: binary SI (`1Mi`, `1536Ki`) when `binary` and the
/// value is a multiple of 1024 of at least 1024, otherwise decimal SI with
/// the largest exact power of 1000 (`500`, `2k`, `100M`; a binary value that
/// is no multiple of 1024 prints without a suffix, as upstream).
///
/// ```
/// use actlet::quantity::canonical_units;
/// assert_eq!(canonical_units(1 << 20, true), "1Mi");
/// assert_eq!(canonical_units(1536 * 1024, true), "1536Ki");
/// assert_eq!(canonical_units(3000, true), "3000");
/// assert_eq!(canonical_units(512, true), "512");
/// assert_eq!(canonical_units(2_000_000, false), "2M");
/// assert_eq!(canonical_units(1500, false), "1500");
/// assert_eq!(canonical_units(0, true), "0");
/// ```
pub fn canonical_units(value: i64, binary: bool) -> String {
    const BINARY: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    const DECIMAL: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    let (base, suffixes) = if binary && value.unsigned_abs() >= 1024 {
        (1024, BINARY)
    } else {
        (1000, DECIMAL)
    };
    let (mut v, mut i) = (value, 0);
    while v != 0 && v % base == 0 && i + 1 < suffixes.len() {
        v /= base;
        i += 1;
    }
    format!("{v}{}", suffixes[i])
}

fn ceil_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b > 0 { q + 1 } else { q }
}

fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> ParsedQuantity {
        ParsedQuantity::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn cpu_quantities_parse_to_millicores() {
        assert_eq!(q("500m").milli_value(), 500);
        assert_eq!(q("1").milli_value(), 1000);
        assert_eq!(q("0.5").milli_value(), 500);
        assert_eq!(q("2.25").milli_value(), 2250);
        assert_eq!(q("100u").milli_value(), 1, "sub-milli values round up");
        assert_eq!(q("1.5").value(), 2, "value() rounds up");
        assert_eq!(q("250m").value(), 1);
    }

    #[test]
    fn memory_quantities_parse_to_bytes() {
        assert_eq!(q("128Mi").value(), 128 * 1024 * 1024);
        assert_eq!(q("1Ki").value(), 1024);
        assert_eq!(q("1Gi").value(), 1 << 30);
        assert_eq!(q("1G").value(), 1_000_000_000);
        assert_eq!(q("1k").value(), 1000);
        assert_eq!(q("1e3").value(), 1000);
        assert_eq!(q("1E3").value(), 1000);
        assert_eq!(q("12e-1").milli_value(), 1200);
        assert_eq!(q("1.5Gi").value(), 3 << 29);
        assert_eq!(q("1Ei").value(), 1 << 60);
        assert_eq!(q("1e+2").value(), 100);
    }

    #[test]
    fn signs_and_whitespace_are_accepted() {
        assert_eq!(q("+1").value(), 1);
        assert_eq!(q("-1").value(), -1);
        assert_eq!(q(" 2 ").value(), 2);
        assert_eq!(q(".5").milli_value(), 500);
        assert_eq!(q("5.").value(), 5);
    }

    #[test]
    fn zero_is_zero_in_every_unit() {
        for s in ["0", "0m", "0Mi", "0.0", "0e9"] {
            assert!(q(s).is_zero(), "{s}");
        }
    }

    #[test]
    fn invalid_quantities_are_rejected() {
        for s in [
            "", "abc", "1Q", "1.2.3", "Mi", "1Mii", "1e", "1e+", "--1", "1 Mi", "1ki", ".",
        ] {
            assert!(ParsedQuantity::parse(s).is_err(), "{s:?} should be rejected");
        }
    }

    #[test]
    fn overflowing_quantities_are_rejected_not_wrapped() {
        assert!(ParsedQuantity::parse("1e100").is_err());
        assert!(ParsedQuantity::parse("99999999999999999999999999999999999999999").is_err());
        assert_eq!(q("1e-100").nanos(), 1, "tiny positive values round up to one nano");
    }

    #[test]
    fn values_saturate_at_i64() {
        assert_eq!(q("1e20").value(), i64::MAX);
        assert_eq!(q("1e18").milli_value(), i64::MAX);
    }

    #[test]
    fn quantities_compare_by_value_not_spelling() {
        assert_eq!(q("1"), q("1000m"));
        assert_eq!(q("1Ki"), q("1024"));
        assert!(q("1Mi") > q("1M"));
        assert_eq!(q("1").saturating_add(q("500m")), q("1.5"));
        assert_eq!(ParsedQuantity::from_units(2), q("2"));
        assert_eq!(ParsedQuantity::from_milli(1500), q("1.5"));
        assert_eq!(
            ParsedQuantity::from_quantity(&Quantity("64Mi".into())),
            Ok(q("67108864"))
        );
    }
}
