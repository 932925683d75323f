//! How the console prints figures: bytes in binary units, rates, durations, and epoch
//! milliseconds as UTC times. Pure functions.

/// `1536` → `1.5 KiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A per-second rate with one decimal below 100.
pub fn rate(per_second: f64) -> String {
    if per_second < 100.0 {
        format!("{per_second:.1}/s")
    } else {
        format!("{per_second:.0}/s")
    }
}

/// Whole numbers with thin separators: `1234567` → `1,234,567`.
pub fn count(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration in milliseconds as `850 ms`, `12.3 s`, `4 min 5 s`, `3 h 2 min`, `2 d 4 h`.
pub fn duration_ms(ms: i64) -> String {
    let ms = ms.max(0);
    let s = ms / 1000;
    match ms {
        0..=999 => format!("{ms} ms"),
        1000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..=3_599_999 => format!("{} min {} s", s / 60, s % 60),
        3_600_000..=86_399_999 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

/// Epoch milliseconds as `2026-12-04 18:46:01 UTC`; negative (Kafka's "none") as `-`.
pub fn time_ms(ms: i64) -> String {
    if ms < 0 {
        return "-".to_string();
    }
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_print_as_people_read_them() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(5 * 1024 * 1024 * 1024), "5.0 GiB");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(-1000), "-1,000");
        assert_eq!(count(12), "12");
        assert_eq!(duration_ms(850), "850 ms");
        assert_eq!(duration_ms(12_300), "12.3 s");
        assert_eq!(duration_ms(245_000), "4 min 5 s");
        assert_eq!(rate(2.25), "2.2/s");
    }

    #[test]
    fn utc_times() {
        assert_eq!(time_ms(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(time_ms(1_796_323_561_000), "2026-12-03 18:46:01 UTC");
        assert_eq!(time_ms(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(time_ms(-1), "-");
    }
}
