//! Durations as people write them (`"90s"`, `"1h30m"`, `"01:15:00"`) and seconds as the
//! outputs print them.

use super::{EmuDuration, MAX_SECS, MICROS_PER_SEC};

/// Seconds with up to six decimals and no trailing zeros: `90`, `2.3`, `0.005`.
pub fn format_secs(micros: u64) -> String {
    write_secs(micros, &mut [0u8; 32]).to_string()
}

/// `micros` as [`format_secs`] writes it, into `buf`, without allocating (every traced
/// message writes its time).
pub fn write_secs(micros: u64, buf: &mut [u8; 32]) -> &str {
    // Only ASCII digits and a dot are written.
    std::str::from_utf8(write_secs_ascii(micros, buf)).unwrap_or("")
}

/// [`write_secs`] as bytes, for writers of bytes (a csv row per VM span), which need not
/// check them for UTF-8.
pub(crate) fn write_secs_ascii(micros: u64, buf: &mut [u8; 32]) -> &[u8] {
    // The whole seconds end at the dot, which leaves room for six decimals after it (and
    // `u64::MAX` µs has 14 digits of seconds before it).
    const DOT: usize = 25;
    let (whole, frac) = (micros / MICROS_PER_SEC, micros % MICROS_PER_SEC);
    let start = write_digits(whole, buf, DOT);
    if frac == 0 {
        return &buf[start..DOT];
    }
    // All six decimals two at a time, then the trailing zeros cut off: a digit at a time
    // with a division and a loop for the zeros cost twice as much (two times a span's row).
    buf[DOT] = b'.';
    let frac = frac as usize;
    for (k, pair) in [frac / 10_000, frac / 100 % 100, frac % 100]
        .into_iter()
        .enumerate()
    {
        let at = DOT + 1 + 2 * k;
        buf[at..at + 2].copy_from_slice(&DIGIT_PAIRS[2 * pair..2 * pair + 2]);
    }
    // `frac` is not zero, so a digit other than `0` stops this before the dot.
    let mut end = DOT + 7;
    while buf[end - 1] == b'0' {
        end -= 1;
    }
    &buf[start..end]
}

/// `"00010203…99"`: two digits at a time halve the divisions of a long number.
const DIGIT_PAIRS: [u8; 200] = {
    let mut pairs = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        pairs[2 * i] = b'0' + (i / 10) as u8;
        pairs[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    pairs
};

/// Writes `n` in decimal into `buf`, ending just before `end`; returns where it begins.
/// `buf[..end]` must have room for its digits (20 for any `u64`).
pub(crate) fn write_digits(mut n: u64, buf: &mut [u8], mut end: usize) -> usize {
    let mut pair = |n: u64, end: &mut usize| {
        let at = n as usize * 2;
        *end -= 2;
        buf[*end..*end + 2].copy_from_slice(&DIGIT_PAIRS[at..at + 2]);
    };
    while n >= 100 {
        pair(n % 100, &mut end);
        n /= 100;
    }
    if n >= 10 {
        pair(n, &mut end);
    } else {
        end -= 1;
        buf[end] = b'0' + n as u8;
    }
    end
}

/// Parses a human duration: `"90s"`, `"2h"`, `"1d"`, `"1h30m"`, `"500ms"`, `"250us"`,
/// `"1.5h"`, a clock form `"01:15:00"` (h:m:s), or a bare number of seconds (`"42"`).
pub fn parse_duration(text: &str) -> Result<EmuDuration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    if s.contains(':') {
        return parse_clock(s);
    }
    if let Ok(secs) = s.parse::<f64>() {
        return checked_secs(secs, text);
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(format!("`{text}` is not a duration"));
        }
        let value: f64 = rest[..num_len]
            .parse()
            .map_err(|_| format!("`{}` is not a number", &rest[..num_len]))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = rest[..unit_len].trim();
        rest = &rest[unit_len..];
        let scale = match unit {
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" | "sec" | "secs" => 1.0,
            "m" | "min" | "mins" => 60.0,
            "h" | "hr" | "hrs" => 3600.0,
            "d" | "day" | "days" => 86_400.0,
            "w" | "week" | "weeks" => 604_800.0,
            "" => {
                return Err(format!(
                    "`{text}` needs a unit after {value} (us, ms, s, m, h, d, w)"
                ))
            }
            other => {
                return Err(format!(
                    "unknown time unit `{other}` in `{text}` (use us, ms, s, m, h, d, w)"
                ))
            }
        };
        total += value * scale;
    }
    checked_secs(total, text)
}

fn checked_secs(secs: f64, text: &str) -> Result<EmuDuration, String> {
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("`{text}` is not a non-negative duration"));
    }
    EmuDuration::checked_from_secs_f64(secs).ok_or_else(|| {
        format!("`{text}` is too long: durations and times run from 0 to 10^12 s ({MAX_SECS} s, about 31 700 years)")
    })
}

fn parse_clock(s: &str) -> Result<EmuDuration, String> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 3 {
        return Err(format!("`{s}` is not a clock time; write hh:mm:ss"));
    }
    let h: u64 = parts[0]
        .parse()
        .map_err(|_| format!("bad hours in `{s}`"))?;
    let m: u64 = parts[1]
        .parse()
        .map_err(|_| format!("bad minutes in `{s}`"))?;
    let sec: f64 = parts[2]
        .parse()
        .map_err(|_| format!("bad seconds in `{s}`"))?;
    if m >= 60 || !(0.0..60.0).contains(&sec) {
        return Err(format!("`{s}`: minutes and seconds must be below 60"));
    }
    // In floating point: hours × 3600 in integers wraps for a huge hour count.
    checked_secs(h as f64 * 3600.0 + (m * 60) as f64 + sec, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_human_forms() {
        assert_eq!(parse_duration("90s").unwrap(), EmuDuration::from_secs(90));
        assert_eq!(parse_duration("2h").unwrap(), EmuDuration::from_secs(7200));
        assert_eq!(
            parse_duration("1d").unwrap(),
            EmuDuration::from_secs(86_400)
        );
        assert_eq!(
            parse_duration("1h30m").unwrap(),
            EmuDuration::from_secs(5400)
        );
        assert_eq!(
            parse_duration("5ms").unwrap(),
            EmuDuration::from_micros(5000)
        );
        assert_eq!(
            parse_duration("2.3s").unwrap(),
            EmuDuration::from_micros(2_300_000)
        );
        assert_eq!(
            parse_duration("00:08:50").unwrap(),
            EmuDuration::from_secs(530)
        );
        assert_eq!(parse_duration("42").unwrap(), EmuDuration::from_secs(42));
        assert_eq!(
            parse_duration("250us").unwrap(),
            EmuDuration::from_micros(250)
        );
    }

    #[test]
    fn bad_durations_are_errors_not_panics() {
        for bad in [
            "",
            "h",
            "5 parsecs",
            "-3s",
            "1:2",
            "00:61:00",
            "1e400",
            "s5",
            "5x",
            "1e13",
            "5124095576030432:00:00",
            "18446744073709551615:00:00",
            "40000000w",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn seconds_format_without_float_noise() {
        assert_eq!(format_secs(0), "0");
        assert_eq!(format_secs(2_300_000), "2.3");
        assert_eq!(format_secs(5_000), "0.005");
        assert_eq!(format_secs(530_000_000), "530");
        assert_eq!(format_secs(1_000_001), "1.000001");
        assert_eq!(format_secs(u64::MAX), "18446744073709.551615");
        assert_eq!(EmuDuration::from_secs(90).to_string(), "90s");
    }

    /// The formatter as it was before it wrote the decimals two at a time: the reference
    /// the faster one must match byte for byte.
    fn old_secs(micros: u64) -> Vec<u8> {
        let mut buf = [0u8; 32];
        let (whole, mut frac) = (micros / MICROS_PER_SEC, micros % MICROS_PER_SEC);
        let mut end = buf.len();
        if frac != 0 {
            let mut digits = 6;
            while frac % 10 == 0 {
                frac /= 10;
                digits -= 1;
            }
            for _ in 0..digits {
                end -= 1;
                buf[end] = b'0' + (frac % 10) as u8;
                frac /= 10;
            }
            end -= 1;
            buf[end] = b'.';
        }
        let end = write_digits(whole, &mut buf, end);
        buf[end..].to_vec()
    }

    /// Seconds as `{whole}.{six decimals}` with the trailing zeros (and a bare dot) cut off.
    fn plain_secs(micros: u64) -> String {
        let text = format!("{}.{:06}", micros / MICROS_PER_SEC, micros % MICROS_PER_SEC);
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }

    #[test]
    fn seconds_are_written_as_before_for_every_fraction_and_at_the_edges() {
        let check = |micros: u64| {
            let ours = write_secs_ascii(micros, &mut [b'x'; 32]).to_vec();
            assert_eq!(ours, old_secs(micros), "{micros}");
            assert_eq!(ours, plain_secs(micros).as_bytes(), "{micros}");
        };
        // Every fraction of a second, after no whole seconds, several and nearly the most.
        for frac in 0..MICROS_PER_SEC {
            for whole in [0, 1_234_567, u64::MAX / MICROS_PER_SEC - 1] {
                let micros = whole * MICROS_PER_SEC + frac;
                assert_eq!(
                    write_secs_ascii(micros, &mut [b'x'; 32]),
                    old_secs(micros),
                    "{micros}"
                );
            }
        }
        // Around each power of ten, and the ends of the range.
        for p in 0..20 {
            let ten = 10u64.pow(p);
            for micros in [ten - 1, ten, ten + 1, ten.saturating_mul(7)] {
                check(micros);
            }
        }
        for micros in [0, 1, u64::MAX, u64::MAX - 1, MAX_SECS * MICROS_PER_SEC] {
            check(micros);
        }
    }

    proptest::proptest! {
        #[test]
        fn seconds_are_written_as_before(micros in proptest::num::u64::ANY) {
            let ours = write_secs_ascii(micros, &mut [0u8; 32]).to_vec();
            proptest::prop_assert_eq!(&ours, &old_secs(micros));
            proptest::prop_assert_eq!(ours, plain_secs(micros).into_bytes());
        }

        #[test]
        fn digits_are_the_decimal_form(n in proptest::prop_oneof![0u64..1000, proptest::num::u64::ANY]) {
            let mut buf = [b'x'; 24];
            let at = write_digits(n, &mut buf, 22);
            let decimal = n.to_string();
            proptest::prop_assert_eq!(&buf[at..22], decimal.as_bytes());
            proptest::prop_assert!(buf[..at].iter().all(|&b| b == b'x'), "wrote before its start");
        }
    }
}
