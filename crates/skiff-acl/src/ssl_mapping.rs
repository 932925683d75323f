//! Kafka's `ssl.principal.mapping.rules`: from a client certificate's subject distinguished
//! name (RFC 2253 text, as Java's `X500Principal.getName()` writes it, e.g.
//! `CN=alice,OU=Eng,O=Acme,C=US`) to the name of the `User:` principal.
//!
//! The value is a comma-separated list of rules, tried in order; the first that applies
//! gives the name, and later ones are ignored:
//! - `DEFAULT` — the distinguished name unchanged;
//! - `RULE:pattern/replacement/` or `RULE:pattern/replacement/L` (or `/U`) — applies when the
//!   regular expression `pattern` matches the *whole* name; the result is the name with every
//!   match of `pattern` replaced by `replacement` (`$1` … group references, `\x` a literal
//!   `x`), then lower- or upper-cased when `L` / `U` is given. Inside `pattern` and
//!   `replacement`, `\/` stands for `/` and a backslash escapes the next character, so a rule
//!   may contain commas and slashes.
//!
//! Splitting follows Kafka's: blanks around rules and separators are ignored, empty entries
//! (`,,`) are skipped, and anything else (`default`, `DEFAULT/L`, a rule with a missing `/`,
//! text after the `L`/`U`) is an error naming the rule and the part that was not understood.
//! A reference to a group the pattern does not have (`$3` with two groups) is kept as literal
//! text, as Kafka does; a multi-digit reference is shortened until it names a group (`$12`
//! with one group is group 1 followed by `2`). When no rule applies, mapping fails (Kafka then
//! fails the connection's authentication).
//!
//! Differences from Java, both in the pattern language: patterns are compiled by the `regex`
//! crate, which has no back-references or look-around (such a rule is refused at parse time)
//! and whose `\w`, `\d`, `\s` are Unicode-aware; and where Kafka's escaping of several
//! invalid group references in one replacement misplaces its backslashes, here each is kept
//! literally.
//!
//! Thread safety: immutable after parsing; share it freely.

use std::fmt;

use regex::{Captures, Regex};

use crate::AclError;

/// Kafka's config key for the rules.
pub const SSL_PRINCIPAL_MAPPING_RULES_CONFIG: &str = "ssl.principal.mapping.rules";
/// Its default value: the distinguished name unchanged.
pub const DEFAULT_RULES: &str = "DEFAULT";

/// The parsed rules.
#[derive(Clone, Debug)]
pub struct SslPrincipalMapper {
    rules: Vec<Rule>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

#[derive(Clone, Debug)]
enum Rule {
    Default,
    Replace {
        /// The pattern as written (for messages and `Display`).
        pattern: String,
        /// Finds the matches to replace.
        find: Regex,
        /// The same pattern anchored at both ends: "matches the whole name".
        whole: Regex,
        replacement: String,
        case: Case,
    },
}

impl Default for SslPrincipalMapper {
    /// Kafka's default value, `DEFAULT`.
    fn default() -> SslPrincipalMapper {
        SslPrincipalMapper {
            rules: vec![Rule::Default],
        }
    }
}

/// Java's `\s`.
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{b}' | '\u{c}' | '\r')
}

/// If a separator (blanks, then a comma and blanks, or the end) starts at `i`, where the next
/// rule begins.
fn separator_at(s: &str, i: usize) -> Option<usize> {
    let rest = &s[i..];
    let after_blanks = i + (rest.len() - rest.trim_start_matches(is_blank).len());
    let tail = &s[after_blanks..];
    if tail.is_empty() {
        return Some(s.len());
    }
    let after_comma = tail.strip_prefix(',')?;
    Some(s.len() - after_comma.trim_start_matches(is_blank).len())
}

/// The first position at or after `i` where a separator starts, and where the next rule
/// begins.
fn next_separator(s: &str, i: usize) -> (usize, usize) {
    s[i..]
        .char_indices()
        .map(|(k, _)| i + k)
        .chain([s.len()])
        .find_map(|k| separator_at(s, k).map(|next| (k, next)))
        .unwrap_or((s.len(), s.len()))
}

/// Scan `text` up to an unescaped `/` (a backslash takes the next character with it); the
/// part before it and the position of the `/`.
fn scan_part(s: &str, i: usize) -> Option<(&str, usize)> {
    let mut chars = s[i..].char_indices();
    while let Some((k, c)) = chars.next() {
        match c {
            '/' => return Some((&s[i..i + k], i + k)),
            '\\' => {
                chars.next()?;
            }
            _ => {}
        }
    }
    None
}

/// `pattern/replacement/` and an optional `L`/`U` after `RULE:` at `i`: the parts and the
/// position after them.
fn scan_rule(s: &str, i: usize) -> Option<(&str, &str, Case, usize)> {
    let (pattern, slash) = scan_part(s, i)?;
    let (replacement, slash2) = scan_part(s, slash + 1)?;
    let after = slash2 + 1;
    let (case, end) = match s[after..].chars().next() {
        Some('L') => (Case::Lower, after + 1),
        Some('U') => (Case::Upper, after + 1),
        _ => (Case::Keep, after),
    };
    Some((pattern, replacement, case, end))
}

impl SslPrincipalMapper {
    /// Parse the value of `ssl.principal.mapping.rules`.
    pub fn parse(text: &str) -> Result<SslPrincipalMapper, AclError> {
        let s = text.trim_matches(|c: char| c <= ' ');
        let mut rules = Vec::new();
        let mut pos = 0;
        loop {
            let rest = &s[pos..];
            pos += rest.len() - rest.trim_start_matches(is_blank).len();
            if pos >= s.len() {
                break;
            }
            let rest = &s[pos..];
            if rest.starts_with("DEFAULT") {
                if let Some(next) = separator_at(s, pos + "DEFAULT".len()) {
                    rules.push(Rule::Default);
                    pos = next;
                    continue;
                }
            }
            if rest.starts_with("RULE:") {
                if let Some((pattern, replacement, case, end)) = scan_rule(s, pos + 5) {
                    let (junk_end, next) = next_separator(s, end);
                    if junk_end > end {
                        return Err(AclError::MappingRules(format!(
                            "invalid rule `{}`, unmatched substring: `{}`",
                            &s[pos..junk_end],
                            &s[end..junk_end]
                        )));
                    }
                    rules.push(Rule::compile(pattern, replacement, case)?);
                    pos = next;
                    continue;
                }
            }
            let (end, next) = next_separator(s, pos);
            let rule = &s[pos..end];
            if !rule.is_empty() {
                let unmatched = rule.strip_prefix("DEFAULT").unwrap_or(rule);
                return Err(AclError::MappingRules(format!(
                    "invalid rule `{rule}`, unmatched substring: `{unmatched}`"
                )));
            }
            pos = next;
        }
        Ok(SslPrincipalMapper { rules })
    }

    /// The principal name for the distinguished name `dn`.
    pub fn name(&self, dn: &str) -> Result<String, AclError> {
        for rule in &self.rules {
            if let Some(name) = rule.apply(dn)? {
                return Ok(name);
            }
        }
        Err(AclError::Mapping(format!(
            "no ssl.principal.mapping.rules rule applies to `{dn}` (rules {self})"
        )))
    }
}

impl Rule {
    fn compile(pattern: &str, replacement: &str, case: Case) -> Result<Rule, AclError> {
        let bad = |e: regex::Error| {
            AclError::MappingRules(format!(
                "the pattern of rule `RULE:{pattern}/...` is not usable: {e}"
            ))
        };
        Ok(Rule::Replace {
            pattern: pattern.to_string(),
            find: Regex::new(pattern).map_err(bad)?,
            whole: Regex::new(&format!(r"\A(?:{pattern})\z")).map_err(bad)?,
            replacement: replacement.to_string(),
            case,
        })
    }

    /// `Ok(None)` when the rule does not apply to `dn`.
    fn apply(&self, dn: &str) -> Result<Option<String>, AclError> {
        let Rule::Replace {
            pattern,
            find,
            whole,
            replacement,
            case,
        } = self
        else {
            return Ok(Some(dn.to_string()));
        };
        if !whole.is_match(dn) {
            return Ok(None);
        }
        let fail = |reason: String| {
            AclError::Mapping(format!(
                "rule `RULE:{pattern}/{replacement}/` cannot map `{dn}`: {reason}"
            ))
        };
        // Every match, found as Java's Matcher.find does: after an empty match the search
        // moves one character on; after a non-empty one it may find an empty match at its end.
        let mut out = String::new();
        let mut copied = 0;
        let mut from = 0;
        while from <= dn.len() {
            let Some(caps) = find.captures_at(dn, from) else {
                break;
            };
            let Some(m) = caps.get(0) else {
                break;
            };
            out.push_str(&dn[copied..m.start()]);
            expand(&mut out, replacement, &caps, find).map_err(fail)?;
            copied = m.end();
            from = if m.is_empty() {
                match dn[m.end()..].chars().next() {
                    Some(c) => m.end() + c.len_utf8(),
                    None => dn.len() + 1,
                }
            } else {
                m.end()
            };
        }
        out.push_str(&dn[copied..]);
        Ok(Some(match case {
            Case::Keep => out,
            Case::Lower => out.to_lowercase(),
            Case::Upper => out.to_uppercase(),
        }))
    }
}

/// Append `replacement` for one match, with Java's replacement syntax and Kafka's treatment
/// of references to groups that do not exist (see the module docs).
fn expand(
    out: &mut String,
    replacement: &str,
    caps: &Captures<'_>,
    re: &Regex,
) -> Result<(), String> {
    let groups = re.captures_len() - 1;
    let mut chars = replacement.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, escaped)) => out.push(escaped),
                None => return Err("the replacement ends with a lone backslash".into()),
            },
            '$' => {
                let rest = &replacement[i + 1..];
                let digits: &str = &rest
                    [..rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len()];
                if let Some(name) = rest.strip_prefix('{') {
                    let Some(close) = name.find('}') else {
                        return Err("a `${` group name lacks its `}`".into());
                    };
                    let name = &name[..close];
                    if re.capture_names().flatten().all(|n| n != name) {
                        return Err(format!("no group named `{name}`"));
                    }
                    out.push_str(caps.name(name).map_or("", |m| m.as_str()));
                    // Skip `{`, the name and `}` (counted in characters, not bytes).
                    for _ in 0..name.chars().count() + 2 {
                        chars.next();
                    }
                    continue;
                }
                if digits.is_empty() {
                    return Err("a `$` is not followed by a group number".into());
                }
                if groups > 0 && !digits.starts_with('0') {
                    // Kafka keeps a reference literal when even its shortest form (dropping
                    // trailing digits down to one) names no group.
                    let mut n: usize = digits.parse().unwrap_or(usize::MAX);
                    while n > groups && n >= 10 {
                        n /= 10;
                    }
                    if n > groups {
                        out.push('$');
                        continue;
                    }
                }
                // Java: the first digit must name a group; more digits are taken while the
                // number still names one.
                let mut used = 0;
                let mut n = 0usize;
                for d in digits.bytes() {
                    let next = n * 10 + usize::from(d - b'0');
                    if used > 0 && next > groups {
                        break;
                    }
                    n = next;
                    used += 1;
                }
                if n > groups {
                    return Err(format!("no group {n}"));
                }
                out.push_str(caps.get(n).map_or("", |m| m.as_str()));
                for _ in 0..used {
                    chars.next();
                }
            }
            _ => out.push(c),
        }
    }
    Ok(())
}

impl fmt::Display for SslPrincipalMapper {
    /// The rules as Kafka lists them: `[RULE:pattern/replacement/L, DEFAULT]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, rule) in self.rules.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match rule {
                Rule::Default => f.write_str("DEFAULT")?,
                Rule::Replace {
                    pattern,
                    replacement,
                    case,
                    ..
                } => {
                    write!(f, "RULE:{pattern}/{replacement}")?;
                    match case {
                        Case::Lower => f.write_str("/L")?,
                        Case::Upper => f.write_str("/U")?,
                        Case::Keep => {}
                    }
                }
            }
        }
        f.write_str("]")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "ssl_mapping_tests.rs"]
mod tests;
