//! A parser for the Prometheus text exposition format 0.0.4, enough to read Skiff's own
//! `/metrics`: comment lines are skipped, samples become `name`, labels and value (an
//! optional timestamp is ignored).
//!
//! Pure functions over untrusted text: every index is checked, nothing panics on bad input.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, PartialEq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "metrics line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

pub fn parse(text: &str) -> Result<Vec<Sample>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        out.push(parse_line(line).map_err(|message| ParseError {
            line: i + 1,
            message,
        })?);
    }
    Ok(out)
}

fn parse_line(line: &str) -> Result<Sample, String> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .ok_or("a sample needs a value")?;
    let (name, mut rest) = line.split_at(name_end);
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    {
        return Err(format!("bad metric name {name:?}"));
    }
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        rest = parse_labels(after, &mut labels)?;
    }
    let value = rest
        .split_whitespace()
        .next()
        .ok_or("a sample needs a value")?;
    Ok(Sample {
        name: name.to_string(),
        labels,
        value: parse_value(value)?,
    })
}

/// Parses `k="v",...}` and returns what follows the closing brace.
fn parse_labels<'a>(mut s: &'a str, out: &mut Vec<(String, String)>) -> Result<&'a str, String> {
    loop {
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix('}') {
            return Ok(rest);
        }
        let eq = s.find('=').ok_or("label without `=`")?;
        let key = s.get(..eq).unwrap_or_default().trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("bad label name {key:?}"));
        }
        let after = s.get(eq + 1..).unwrap_or_default().trim_start();
        let mut chars = after
            .strip_prefix('"')
            .ok_or("label value must be quoted")?
            .char_indices();
        let mut value = String::new();
        let end = loop {
            match chars.next() {
                None => return Err("unterminated label value".to_string()),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c @ ('\\' | '"'))) => value.push(c),
                    _ => return Err("bad escape in label value".to_string()),
                },
                Some((_, c)) => value.push(c),
            }
        };
        out.push((key.to_string(), value));
        // `after` starts with the opening quote: skip it, the value and the closing quote.
        s = after.get(end + 2..).unwrap_or_default().trim_start();
        if let Some(rest) = s.strip_prefix(',') {
            s = rest;
        } else if !s.starts_with('}') {
            return Err("expected `,` or `}` after a label".to_string());
        }
    }
}

fn parse_value(v: &str) -> Result<f64, String> {
    match v {
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => v.parse().map_err(|_| format!("bad sample value {v:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_labels_escapes_and_specials() {
        let text = "# HELP a_total A.\n# TYPE a_total counter\na_total 3\n\
                    b{topic=\"x\\\"y\\\\z\\nw\",partition=\"0\"} 0.25 1700000000000\n\
                    h_bucket{le=\"+Inf\"} +Inf\n\n";
        let s = parse(text).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!((s[0].name.as_str(), s[0].value), ("a_total", 3.0));
        assert_eq!(s[1].label("topic"), Some("x\"y\\z\nw"));
        assert_eq!(s[1].label("partition"), Some("0"));
        assert_eq!(s[1].value, 0.25);
        assert_eq!(s[2].value, f64::INFINITY);
    }

    #[test]
    fn errors_name_the_line() {
        for bad in [
            "x",
            "x{a=\"1\" 2",
            "x{a=1} 2",
            "x{a=\"1} 2",
            "x{=\"1\"} 2",
            "x{a=\"\\q\"} 2",
            "x{a=\"1\"b=\"2\"} 3",
            "x abc",
            "bad-name 1",
        ] {
            let e = parse(&format!("ok 1\n{bad}\n")).unwrap_err();
            assert_eq!(e.line, 2, "{bad}: {e}");
        }
    }
}
