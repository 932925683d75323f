//! Tests of `ssl.principal.mapping.rules`, using the cases Kafka documents and tests
//! (rewritten here as our own table).

use super::*;

fn listed(rules: &str) -> String {
    match SslPrincipalMapper::parse(rules) {
        Ok(m) => m.to_string(),
        Err(e) => panic!("{rules:?} should parse: {e}"),
    }
}

#[test]
fn kafka_documentation_example() {
    // The four-rule example of Kafka's security documentation, one rule per line.
    let m = SslPrincipalMapper::parse(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\n\
         RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,\n\
         RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,\n\
         DEFAULT",
    )
    .unwrap();
    let name = |dn: &str| m.name(dn).unwrap();
    // A service user: the first rule keeps the CN as written.
    assert_eq!(
        name("CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"),
        "serviceuser"
    );
    // Anyone else with the full six attributes: CN@OU, lower-cased.
    assert_eq!(
        name("CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"),
        "adminuser@admin"
    );
    // A CN somewhere else in the name: the third rule.
    assert_eq!(name("O=Acme,cN=Robot.7,C=US"), "robot.7");
    // No CN at all: DEFAULT keeps the whole name.
    assert_eq!(
        name("OU=JavaSoft,O=Sun Microsystems,C=US"),
        "OU=JavaSoft,O=Sun Microsystems,C=US"
    );
}

#[test]
fn first_applicable_rule_wins_with_case_flags() {
    let m = SslPrincipalMapper::parse(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, \
         RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, \
         RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, \
         RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, DEFAULT",
    )
    .unwrap();
    let name = |dn: &str| m.name(dn).unwrap();
    assert_eq!(name("CN=Duke,OU=ServiceUsers,O=Org,C=US"), "duke");
    assert_eq!(
        name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US"),
        "duke@sme"
    );
    assert_eq!(name("cn=duke,ou=sme,dc=mycp,dc=com"), "DUKE@SME");
    assert_eq!(name("cN=duke,OU=JavaSoft,O=Sun Microsystems"), "DUKE");
    assert_eq!(
        name("OU=JavaSoft,O=Sun Microsystems,C=US"),
        "OU=JavaSoft,O=Sun Microsystems,C=US"
    );
}

#[test]
fn no_applicable_rule_is_an_error() {
    let m = SslPrincipalMapper::parse("RULE:^CN=(.*)$/$1/").unwrap();
    assert_eq!(m.name("CN=a").unwrap(), "a");
    let e = m.name("OU=x").unwrap_err().to_string();
    assert!(e.contains("OU=x"), "{e}");
    // An empty list has no rule at all.
    assert!(SslPrincipalMapper::parse("").unwrap().name("CN=a").is_err());
    assert_eq!(
        SslPrincipalMapper::default().name("CN=a,O=b").unwrap(),
        "CN=a,O=b"
    );
}

#[test]
fn splitting_blanks_and_empty_entries() {
    assert_eq!(listed(""), "[]");
    assert_eq!(listed("DEFAULT"), "[DEFAULT]");
    assert_eq!(listed("RULE://"), "[RULE:/]");
    assert_eq!(listed("RULE:/.*/"), "[RULE:/.*]");
    assert_eq!(listed("RULE:/.*/L"), "[RULE:/.*/L]");
    assert_eq!(listed("RULE://,DEFAULT"), "[RULE:/, DEFAULT]");
    assert_eq!(listed("  RULE:// ,  DEFAULT  "), "[RULE:/, DEFAULT]");
    assert_eq!(
        listed("  RULE:   /     / ,  DEFAULT  "),
        "[RULE:   /     , DEFAULT]"
    );
    assert_eq!(
        listed("  RULE:  /     /U   ,DEFAULT  "),
        "[RULE:  /     /U, DEFAULT]"
    );
    assert_eq!(
        listed("  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "),
        "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]"
    );
    assert_eq!(listed(",   , , ,      , , ,   "), "[]");
    assert_eq!(listed(",,RULE://,,,DEFAULT,,"), "[RULE:/, DEFAULT]");
    assert_eq!(
        listed(",  , RULE: /   /    ,,,   DEFAULT, ,   "),
        "[RULE: /   , DEFAULT]"
    );
}

#[test]
fn escapes_let_rules_hold_slashes_and_commas() {
    assert_eq!(
        listed(r"RULE:\/\\\(\)\n\t/\/\//"),
        r"[RULE:\/\\\(\)\n\t/\/\/]"
    );
    assert_eq!(
        listed(r"RULE:\**\/+/*/L,RULE:\/*\**/**/"),
        r"[RULE:\**\/+/*/L, RULE:\/*\**/**]"
    );
    // Rules whose text looks like other rules: a rule runs to its second unescaped slash.
    assert_eq!(
        listed(
            r"RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT"
        ),
        r"[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]"
    );
    // An escaped slash in the replacement is a slash in the name.
    let m = SslPrincipalMapper::parse(r"RULE:^CN=(\w+),O=(\w+)$/$2\/$1/").unwrap();
    assert_eq!(m.name("CN=bob,O=acme").unwrap(), "acme/bob");
}

#[test]
fn a_comma_inside_a_value() {
    // RFC 2253 escapes a comma inside a value as `\,`; the rule's pattern accepts it.
    let m = SslPrincipalMapper::parse(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT").unwrap();
    assert_eq!(
        m.name(r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz").unwrap(),
        r"Tkac\, Adam"
    );
}

#[test]
fn malformed_rules_are_refused() {
    for bad in [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
        "DEFAULT, nonsense",
        // Not expressible in the regex crate: a back-reference.
        r"RULE:^CN=(a)\1$/x/",
    ] {
        assert!(
            SslPrincipalMapper::parse(bad).is_err(),
            "{bad:?} should be refused"
        );
    }
    let e = SslPrincipalMapper::parse("DEFAULT/L")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unmatched substring: `/L`"), "{e}");
    let e = SslPrincipalMapper::parse("RULE:a/b/LX")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`RULE:a/b/LX`") && e.contains("`X`"), "{e}");
    // Rules that look odd but are valid.
    for good in [
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
    ] {
        assert!(SslPrincipalMapper::parse(good).is_ok(), "{good:?}");
    }
}

#[test]
fn replacement_references() {
    let name = |rules: &str, dn: &str| SslPrincipalMapper::parse(rules).unwrap().name(dn);
    // A reference past the last group stays literal text.
    assert_eq!(name("RULE:^CN=(.*)$/$1@$4/", "CN=x").unwrap(), "x@$4");
    // `$12` with one group: group 1, then the digit 2.
    assert_eq!(name("RULE:^CN=(.*)$/$12/", "CN=x").unwrap(), "x2");
    assert_eq!(
        name("RULE:^CN=(.*),O=(.*)$/$2-$1/", "CN=x,O=y").unwrap(),
        "y-x"
    );
    assert_eq!(name("RULE:^CN=(?P<cn>.*)$/${cn}!/", "CN=x").unwrap(), "x!");
    assert_eq!(name("RULE:^CN=(.*)$/\\$1/", "CN=x").unwrap(), "$1");
    assert_eq!(name("RULE:^CN=(.*)$/[$0]/", "CN=x").unwrap(), "[CN=x]");
    // Without groups Java cannot resolve `$1`; without a number `$` is illegal.
    assert!(name("RULE:^CN=.*$/$1/", "CN=x").is_err());
    assert!(name("RULE:^CN=(.*)$/a$/", "CN=x").is_err());
    assert!(name("RULE:^CN=(.*)$/${nope}/", "CN=x").is_err());
}

#[test]
fn every_match_is_replaced_as_java_does() {
    let name = |rules: &str, dn: &str| SslPrincipalMapper::parse(rules).unwrap().name(dn).unwrap();
    // Java's replaceAll also replaces the empty match at the end of `.*`.
    assert_eq!(name("RULE:.*/x/", "CN=a"), "xx");
    // An anchored pattern matches once.
    assert_eq!(name("RULE:^.*$/x/", "CN=a"), "x");
    // The whole name must match for the rule to apply, then every match is replaced.
    assert_eq!(name("RULE:[a-z]*/<$0>/,DEFAULT", "abc"), "<abc><>");
    assert_eq!(name("RULE:[a-z]+/<$0>/,DEFAULT", "ABC"), "ABC");
}

#[test]
fn escaped_punctuation_in_patterns() {
    // Java lets any punctuation be escaped; so does the regex crate, so rules written for
    // Kafka with `\,` or `\=` keep working.
    let m = SslPrincipalMapper::parse(r"RULE:^CN\=([^\,]+)\,.*$/$1/,DEFAULT").unwrap();
    assert_eq!(m.name("CN=a,O=b").unwrap(), "a");
    let m = SslPrincipalMapper::parse(r"RULE:^(?i)cn=(?<user>[a-z]+),.*$/${user}/L").unwrap();
    assert_eq!(m.name("CN=Bob,O=b").unwrap(), "bob");
}

#[test]
fn non_ascii_group_names_and_text() {
    let m = SslPrincipalMapper::parse("RULE:^CN=(?<né>.*)$/${né}é!/").unwrap();
    assert_eq!(m.name("CN=ü").unwrap(), "üé!");
}

#[test]
fn arbitrary_rule_text_never_panics() {
    // Rule texts and names built from the characters the grammar cares about plus
    // multi-byte ones: parsing and mapping answer Ok or Err, never panic.
    let alphabet = [
        "RULE:", "DEFAULT", "/", "\\", ",", " ", "L", "U", "$", "1", "{", "}", "(", ")", ".*", "é",
        "€", "a", "^", "$1", "\t",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut parsed = 0;
    for _ in 0..5000 {
        let len = next(10);
        let text: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
        if let Ok(m) = SslPrincipalMapper::parse(&text) {
            parsed += 1;
            for dn in ["", "CN=a", "é€", "$1\\"] {
                let _ = m.name(dn);
            }
        }
    }
    assert!(parsed > 100, "only {parsed} random rule texts parsed");
}
