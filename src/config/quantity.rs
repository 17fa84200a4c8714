//! Resource quantities (`100m`, `1.5Gi`, `1e3`) as comparable numbers, for
//! validation (requests ≤ limits). Upstream `resource.ParseQuantity` syntax:
//! `<sign><digits>[.<digits>]<suffix>` where the suffix is a binary SI suffix
//! (`Ki`…`Ei`), a decimal SI suffix (`n u m "" k M G T P E`) or a decimal
//! exponent (`e3`, `E-2`).

/// The upstream message for a quantity that does not parse.
pub const SYNTAX: &str = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// Parses `text` into nano-units (value × 10⁹), rounding up like upstream's
/// canonical form does below nano precision. `None` when it does not parse or
/// is too large to represent.
pub fn parse_nanos(text: &str) -> Option<i128> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'+' => (false, &text[1..]),
        b'-' => (true, &text[1..]),
        _ => (false, text),
    };
    let number_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_len);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    let mut mantissa: i128 = 0;
    for digit in whole.bytes().chain(fraction.bytes()) {
        mantissa = mantissa.checked_mul(10)?.checked_add(i128::from(digit - b'0'))?;
    }
    let (binary_shift, decimal_exponent) = suffix_scale(suffix)?;
    mantissa = mantissa.checked_mul(1i128.checked_shl(binary_shift)?)?;
    let exponent = decimal_exponent + 9 - i32::try_from(fraction.len()).ok()?;
    let nanos = if exponent >= 0 {
        mantissa.checked_mul(10i128.checked_pow(exponent.unsigned_abs())?)?
    } else {
        let divisor = 10i128.checked_pow(exponent.unsigned_abs()).unwrap_or(i128::MAX);
        (mantissa + divisor - 1) / divisor
    };
    Some(if negative { -nanos } else { nanos })
}

/// `(binary shift, decimal exponent)` of a suffix.
fn suffix_scale(suffix: &str) -> Option<(u32, i32)> {
    let scale = match suffix {
        "" => (0, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let exponent: i32 = exponent.parse().ok()?;
            (0, exponent.clamp(-100, 100))
        }
    };
    Some(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_upstream_syntax() {
        let cases: [(&str, Option<i128>); 20] = [
            ("1", Some(1_000_000_000)),
            ("100m", Some(100_000_000)),
            ("0.1", Some(100_000_000)),
            (".5", Some(500_000_000)),
            ("1.", Some(1_000_000_000)),
            ("+2", Some(2_000_000_000)),
            ("-1", Some(-1_000_000_000)),
            ("1k", Some(1_000_000_000_000)),
            ("1Ki", Some(1_024_000_000_000)),
            ("1Gi", Some(1_073_741_824_000_000_000)),
            ("1.5Gi", Some(1_610_612_736_000_000_000)),
            ("1e3", Some(1_000_000_000_000)),
            ("1E-3", Some(1_000_000)),
            ("5n", Some(5)),
            ("1e-12", Some(1)),
            ("", None),
            ("abc", None),
            ("1.2.3", None),
            ("1Xi", None),
            ("1e", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_nanos(text), expected, "{text}");
        }
    }

    #[test]
    fn compares_across_suffixes() {
        assert_eq!(parse_nanos("1Gi"), parse_nanos("1073741824"));
        assert_eq!(parse_nanos("0.5"), parse_nanos("500m"));
        assert!(parse_nanos("135M") > parse_nanos("128Mi"));
        assert!(parse_nanos("1Ei") > parse_nanos("1E"));
    }

    #[test]
    fn rejects_overflow() {
        assert_eq!(parse_nanos("999999999999999999999999999999999999999999"), None);
        assert_eq!(parse_nanos("1e100"), None);
    }
}
