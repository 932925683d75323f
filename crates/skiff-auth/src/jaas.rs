//! Kafka's `sasl.jaas.config` values, parsed as Kafka parses them (`JaasConfig`, which uses
//! Java's `StreamTokenizer`):
//!
//! ```text
//! org.apache.kafka.common.security.plain.PlainLoginModule required
//!     username="admin" password="admin-secret" user_alice="alice-secret";
//! ```
//!
//! Each entry is `<login module class> <control flag> [<key>=<value> …] ;`. Flags are
//! `required`, `requisite`, `sufficient`, `optional` in any case. Values are bare words
//! (letters, digits, `.`, `-`, `_`, `$`) or strings in double or single quotes with Java
//! escapes (`\"`, `\\`, `\n`, `\t`, `\r`, `\b`, `\f`, octal). `//` and `/* */` comments are
//! skipped. A broker's value must hold exactly one entry (Kafka's `JaasContext` rule).
//!
//! One difference: Kafka's tokenizer turns a bare value starting with a digit into a number
//! and then refuses it ("Value not specified for key"); here such a value is kept as text.
//!
//! Option values may be passwords, so [`JaasEntry`]'s `Debug` prints option names only and
//! no error repeats a value.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::ConfigError;
use crate::plain::{MemoryPlainStore, PlainSecret};
use crate::server::Mechanism;

pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
pub const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
pub const OAUTHBEARER_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

/// A JAAS login module control flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlFlag {
    Required,
    Requisite,
    Sufficient,
    Optional,
}

/// One login module entry.
#[derive(Clone, PartialEq, Eq)]
pub struct JaasEntry {
    pub login_module: String,
    pub flag: ControlFlag,
    pub options: BTreeMap<String, String>,
}

impl fmt::Debug for JaasEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JaasEntry")
            .field("login_module", &self.login_module)
            .field("flag", &self.flag)
            .field("option_names", &self.options.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(String),
    Quoted(String),
    Eq,
    Semi,
    Other(char),
}

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | '$')
}

fn err(at: usize, reason: impl Into<String>) -> ConfigError {
    ConfigError::Jaas {
        at,
        reason: reason.into(),
    }
}

impl<'a> Lexer<'a> {
    fn peek_char(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn skip_space_and_comments(&mut self) -> Result<(), ConfigError> {
        loop {
            let rest = &self.text[self.pos..];
            if let Some(c) = rest.chars().next().filter(|c| c.is_whitespace()) {
                self.pos += c.len_utf8();
            } else if rest.starts_with("//") {
                self.pos += rest.find('\n').unwrap_or(rest.len());
            } else if let Some(body) = rest.strip_prefix("/*") {
                let end = body
                    .find("*/")
                    .ok_or_else(|| err(self.pos, "comment '/*' is not closed"))?;
                self.pos += 2 + end + 2;
            } else {
                return Ok(());
            }
        }
    }

    /// The next token and its byte offset, or `None` at the end.
    fn next(&mut self) -> Result<Option<(usize, Tok)>, ConfigError> {
        self.skip_space_and_comments()?;
        let start = self.pos;
        let Some(c) = self.bump() else {
            return Ok(None);
        };
        let tok = match c {
            '=' => Tok::Eq,
            ';' => Tok::Semi,
            '"' | '\'' => Tok::Quoted(self.quoted(c, start)?),
            c if is_word_char(c) => {
                while self.peek_char().is_some_and(is_word_char) {
                    self.bump();
                }
                Tok::Word(self.text[start..self.pos].to_string())
            }
            c => Tok::Other(c),
        };
        Ok(Some((start, tok)))
    }

    fn quoted(&mut self, quote: char, start: usize) -> Result<String, ConfigError> {
        let mut out = String::new();
        loop {
            let c = self
                .bump()
                .ok_or_else(|| err(start, "quoted value is not closed"))?;
            match c {
                c if c == quote => return Ok(out),
                '\\' => {
                    let e = self
                        .bump()
                        .ok_or_else(|| err(start, "quoted value is not closed"))?;
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'a' => out.push('\u{7}'),
                        'v' => out.push('\u{b}'),
                        '0'..='7' => {
                            // Java: up to three octal digits, the first of a three-digit
                            // escape at most 3.
                            let mut v = e.to_digit(8).unwrap_or(0);
                            let max = if e <= '3' { 2 } else { 1 };
                            for _ in 0..max {
                                match self.peek_char().and_then(|d| d.to_digit(8)) {
                                    Some(d) => {
                                        v = v * 8 + d;
                                        self.bump();
                                    }
                                    None => break,
                                }
                            }
                            out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                        }
                        other => out.push(other),
                    }
                }
                // StreamTokenizer ends a quoted string at a line end.
                '\n' | '\r' => return Err(err(start, "quoted value runs to the end of a line")),
                c => out.push(c),
            }
        }
    }
}

fn control_flag(at: usize, word: &str) -> Result<ControlFlag, ConfigError> {
    match word.to_ascii_uppercase().as_str() {
        "REQUIRED" => Ok(ControlFlag::Required),
        "REQUISITE" => Ok(ControlFlag::Requisite),
        "SUFFICIENT" => Ok(ControlFlag::Sufficient),
        "OPTIONAL" => Ok(ControlFlag::Optional),
        _ => Err(err(
            at,
            format!("invalid login module control flag '{word}' (expected required, requisite, sufficient or optional)"),
        )),
    }
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Word(w) => format!("'{w}'"),
        Tok::Quoted(_) => "a quoted value".into(),
        Tok::Eq => "'='".into(),
        Tok::Semi => "';'".into(),
        Tok::Other(c) => format!("'{c}'"),
    }
}

/// Parses a `sasl.jaas.config` value into its entries (at least one).
pub fn parse(text: &str) -> Result<Vec<JaasEntry>, ConfigError> {
    let mut lx = Lexer { text, pos: 0 };
    let mut entries = Vec::new();
    while let Some((at, tok)) = lx.next()? {
        let Tok::Word(login_module) = tok else {
            return Err(err(
                at,
                format!(
                    "expected a login module class name, found {}",
                    describe(&tok)
                ),
            ));
        };
        let flag = match lx.next()? {
            Some((at, Tok::Word(w))) => control_flag(at, &w)?,
            Some((at, t)) => {
                return Err(err(
                    at,
                    format!(
                        "expected a login module control flag, found {}",
                        describe(&t)
                    ),
                ))
            }
            None => {
                return Err(err(
                    text.len(),
                    format!("login module control flag not specified for {login_module}"),
                ))
            }
        };
        let mut options = BTreeMap::new();
        loop {
            let (at, key) = match lx.next()? {
                Some((_, Tok::Semi)) => break,
                Some((at, Tok::Word(k))) => (at, k),
                Some((at, t)) => {
                    return Err(err(
                        at,
                        format!("expected an option name or ';', found {}", describe(&t)),
                    ))
                }
                None => {
                    return Err(err(
                        text.len(),
                        format!(
                            "JAAS config entry for {login_module} not terminated by semi-colon"
                        ),
                    ))
                }
            };
            match lx.next()? {
                Some((_, Tok::Eq)) => {}
                _ => return Err(err(at, format!("value not specified for key '{key}'"))),
            }
            let value = match lx.next()? {
                Some((_, Tok::Word(v))) | Some((_, Tok::Quoted(v))) => v,
                _ => return Err(err(at, format!("value not specified for key '{key}'"))),
            };
            options.insert(key, value);
        }
        entries.push(JaasEntry {
            login_module,
            flag,
            options,
        });
    }
    if entries.is_empty() {
        return Err(err(0, "login module not specified in JAAS config"));
    }
    Ok(entries)
}

/// Parses a broker's `sasl.jaas.config` value, which must hold exactly one login module.
pub fn parse_single(text: &str) -> Result<JaasEntry, ConfigError> {
    let mut entries = parse(text)?;
    if entries.len() != 1 {
        return Err(ConfigError::JaasContent(format!(
            "JAAS config property contains {} login modules, should be 1 module",
            entries.len()
        )));
    }
    entries
        .pop()
        .ok_or_else(|| ConfigError::JaasContent("login module not specified".into()))
}

/// The login module Kafka expects for a mechanism.
pub fn login_module_for(mechanism: Mechanism) -> &'static str {
    match mechanism {
        Mechanism::Plain => PLAIN_LOGIN_MODULE,
        Mechanism::ScramSha256 | Mechanism::ScramSha512 => SCRAM_LOGIN_MODULE,
        Mechanism::OAuthBearer => OAUTHBEARER_LOGIN_MODULE,
    }
}

impl JaasEntry {
    /// Checks that this entry's login module is the one for `mechanism`.
    pub fn check_module(&self, mechanism: Mechanism) -> Result<(), ConfigError> {
        let want = login_module_for(mechanism);
        if self.login_module != want {
            return Err(ConfigError::JaasContent(format!(
                "the JAAS config for {} must use {want}, not {}",
                mechanism.name(),
                self.login_module
            )));
        }
        Ok(())
    }

    /// PlainLoginModule's `user_<name>="<password>"` options as a user table. `username` and
    /// `password` (the broker's own client credentials) are not users and are skipped.
    pub fn plain_users(&self) -> Result<MemoryPlainStore, ConfigError> {
        self.check_module(Mechanism::Plain)?;
        let mut store = MemoryPlainStore::new();
        for (key, value) in &self.options {
            if let Some(user) = key.strip_prefix("user_") {
                if user.is_empty() {
                    return Err(ConfigError::JaasContent(
                        "option 'user_' names no user".into(),
                    ));
                }
                store.insert(user, PlainSecret::Clear(value.clone()));
            }
        }
        Ok(store)
    }
}

/// Splits a Kafka JAAS config key into its listener and mechanism:
/// `sasl.jaas.config` → `(None, None)`,
/// `listener.name.<listener>.<mechanism>.sasl.jaas.config` → `(Some(listener), Some(mechanism))`
/// (Kafka writes both in lower case there; the mechanism comes back in its canonical case).
/// Other keys give `None`.
pub fn jaas_config_key(key: &str) -> Option<(Option<String>, Option<Mechanism>)> {
    if key == "sasl.jaas.config" {
        return Some((None, None));
    }
    let rest = key
        .strip_prefix("listener.name.")?
        .strip_suffix(".sasl.jaas.config")?;
    let (listener, mechanism) = rest.split_once('.')?;
    let mechanism = Mechanism::from_name(&mechanism.to_ascii_uppercase())?;
    if listener.is_empty() {
        return None;
    }
    Some((Some(listener.to_string()), Some(mechanism)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plain::PlainUserStore;

    #[test]
    fn kafka_plain_example() {
        let e = parse_single(
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required
               username="admin" password="admin-secret"
               user_admin="admin-secret" user_alice="alice-secret";"#,
        )
        .expect("parses");
        assert_eq!(e.login_module, PLAIN_LOGIN_MODULE);
        assert_eq!(e.flag, ControlFlag::Required);
        assert_eq!(e.options.len(), 4);
        assert_eq!(
            e.options.get("user_alice").map(String::as_str),
            Some("alice-secret")
        );
        let users = e.plain_users().expect("users");
        assert_eq!(users.len(), 2);
        assert!(users
            .secret("alice")
            .is_some_and(|s| s.verify(b"alice-secret")));
        assert!(users.secret("admin").is_some());
        assert!(users.secret("username").is_none());
    }

    #[test]
    fn scram_and_oauth_lines() {
        let s = parse_single(
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"x\";",
        )
        .expect("scram");
        assert!(s.check_module(Mechanism::ScramSha512).is_ok());
        assert!(s.check_module(Mechanism::Plain).is_err());
        let o = parse_single(
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule Required unsecuredLoginStringClaim_sub=thePrincipalName;",
        )
        .expect("oauth");
        assert!(o.check_module(Mechanism::OAuthBearer).is_ok());
        assert_eq!(
            o.options
                .get("unsecuredLoginStringClaim_sub")
                .map(String::as_str),
            Some("thePrincipalName")
        );
    }

    #[test]
    fn quoting_escapes_and_comments() {
        let e = parse_single(
            "/* lead */ m.M optional // trailing comment\n a=\"q\\\"uo\\\\te\\n\" b='sin\"gle' c=bare-word_1.$x d=\"\" e=\"\\101\\7\" f=4096 ;",
        )
        .expect("parses");
        assert_eq!(e.flag, ControlFlag::Optional);
        assert_eq!(e.options.get("a").map(String::as_str), Some("q\"uo\\te\n"));
        assert_eq!(e.options.get("b").map(String::as_str), Some("sin\"gle"));
        assert_eq!(
            e.options.get("c").map(String::as_str),
            Some("bare-word_1.$x")
        );
        assert_eq!(e.options.get("d").map(String::as_str), Some(""));
        assert_eq!(e.options.get("e").map(String::as_str), Some("A\u{7}"));
        assert_eq!(e.options.get("f").map(String::as_str), Some("4096"));
    }

    #[test]
    fn several_entries_parse_but_a_broker_wants_one() {
        let two = "a.A required; b.B sufficient x=y;";
        assert_eq!(parse(two).map(|v| v.len()), Ok(2));
        assert_eq!(
            parse_single(two).err().map(|e| e.to_string()),
            Some("invalid JAAS config: JAAS config property contains 2 login modules, should be 1 module".into())
        );
    }

    fn error_of(text: &str) -> String {
        parse(text).err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn errors_say_what_and_where() {
        assert!(error_of("").contains("login module not specified"));
        assert!(error_of("  // only a comment").contains("login module not specified"));
        assert!(error_of("m.M").contains("control flag not specified"));
        assert!(
            error_of("m.M mandatory;").contains("invalid login module control flag 'mandatory'")
        );
        assert!(error_of("m.M required a=\"x\"").contains("not terminated by semi-colon"));
        assert!(error_of("m.M required a;").contains("value not specified for key 'a'"));
        assert!(error_of("m.M required a=;").contains("value not specified for key 'a'"));
        assert!(error_of("m.M required a=\"open;").contains("not closed"));
        assert!(error_of("m.M required /* open").contains("not closed"));
        assert!(error_of("m.M required a=\"x\" ! ;").contains("found '!'"));
        assert!(error_of("\"m\" required;").contains("class name"));
        let at = error_of("m.M required a;");
        assert!(at.contains("at byte 13"), "{at}");
    }

    #[test]
    fn values_never_leak_in_errors_or_debug() {
        let e = parse_single("m.M required user_alice=\"hunter2\";").expect("parses");
        assert!(!format!("{e:?}").contains("hunter2"));
        assert!(!error_of("m.M required user_alice=\"hunter2\" x").contains("hunter2"));
        let plain = format!("{PLAIN_LOGIN_MODULE} required user_=\"x\";");
        assert!(parse_single(&plain).and_then(|e| e.plain_users()).is_err());
        assert!(e.plain_users().is_err(), "wrong module for PLAIN users");
    }

    #[test]
    fn config_keys() {
        assert_eq!(jaas_config_key("sasl.jaas.config"), Some((None, None)));
        assert_eq!(
            jaas_config_key("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config"),
            Some((Some("sasl_ssl".into()), Some(Mechanism::ScramSha256)))
        );
        assert_eq!(
            jaas_config_key("listener.name.external.plain.sasl.jaas.config"),
            Some((Some("external".into()), Some(Mechanism::Plain)))
        );
        assert_eq!(
            jaas_config_key("listener.name.external.gssapi.sasl.jaas.config"),
            None
        );
        assert_eq!(
            jaas_config_key("listener.name.external.sasl.jaas.config"),
            None
        );
        assert_eq!(jaas_config_key("sasl.enabled.mechanisms"), None);
    }
}
