//! AlterUserScramCredentials and DescribeUserScramCredentials through dispatch: upsert,
//! describe, delete, every refusal with Kafka's code and message, durability across a
//! restart, no password on disk, and a SCRAM login against a credential stored through the API.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use skiff_auth::scram::client::ScramClient;
use skiff_auth::scram::server::ScramServer;
use skiff_auth::scram::ScramMechanism;
use skiff_auth::{SaslServer, Step};
use skiff_broker::Broker;

const SHA256: i8 = 1;
const SHA512: i8 = 2;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// What `kafka-configs --add-config 'SCRAM-SHA-n=[iterations=…,password=…]'` sends: the
/// client salts the password itself.
fn upsert(user: &str, mechanism: i8, iterations: i32, password: &str) -> ScramCredentialUpsertion {
    let salt = format!("salt-of-{user}").into_bytes();
    let salted = ScramMechanism::from_kafka_type(mechanism)
        .map(|m| m.salted_password(password.as_bytes(), &salt, iterations.max(1) as u32))
        .unwrap_or_else(|| vec![0; 32]);
    ScramCredentialUpsertion::default()
        .with_name(s(user))
        .with_mechanism(mechanism)
        .with_iterations(iterations)
        .with_salt(Bytes::from(salt))
        .with_salted_password(Bytes::from(salted))
}

fn delete(user: &str, mechanism: i8) -> ScramCredentialDeletion {
    ScramCredentialDeletion::default()
        .with_name(s(user))
        .with_mechanism(mechanism)
}

/// `(user, code, message)` of every row.
async fn alter(
    broker: &Arc<Broker>,
    deletions: Vec<ScramCredentialDeletion>,
    upsertions: Vec<ScramCredentialUpsertion>,
) -> Vec<(String, i16, Option<String>)> {
    let body = RequestKind::AlterUserScramCredentials(
        AlterUserScramCredentialsRequest::default()
            .with_deletions(deletions)
            .with_upsertions(upsertions),
    );
    match common::call(broker, ApiKey::AlterUserScramCredentials, 0, body).await {
        ResponseKind::AlterUserScramCredentials(r) => r
            .results
            .into_iter()
            .map(|x| {
                (
                    x.user.to_string(),
                    x.error_code,
                    x.error_message.map(|m| m.to_string()),
                )
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// `(user, code, message, [(mechanism, iterations)])` of every row.
type Described = Vec<(String, i16, Option<String>, Vec<(i8, i32)>)>;

async fn describe(broker: &Arc<Broker>, users: Option<&[&str]>) -> Described {
    let users = users.map(|us| {
        us.iter()
            .map(|u| UserName::default().with_name(s(u)))
            .collect()
    });
    let body = RequestKind::DescribeUserScramCredentials(
        DescribeUserScramCredentialsRequest::default().with_users(users),
    );
    match common::call(broker, ApiKey::DescribeUserScramCredentials, 0, body).await {
        ResponseKind::DescribeUserScramCredentials(r) => {
            assert_eq!(r.error_code, 0);
            r.results
                .into_iter()
                .map(|x| {
                    (
                        x.user.to_string(),
                        x.error_code,
                        x.error_message.map(|m| m.to_string()),
                        x.credential_infos
                            .iter()
                            .map(|c| (c.mechanism, c.iterations))
                            .collect(),
                    )
                })
                .collect()
        }
        other => panic!("{other:?}"),
    }
}

fn ok(user: &str) -> (String, i16, Option<String>) {
    (user.to_string(), 0, None)
}

fn refused(user: &str, e: ResponseError, m: &str) -> (String, i16, Option<String>) {
    (user.to_string(), e.code(), Some(m.to_string()))
}

/// A described user. Kafka leaves a found user's error message at the schema's default, the
/// empty string (not null), and so does kafka-protocol's default.
fn has(user: &str, infos: &[(i8, i32)]) -> (String, i16, Option<String>, Vec<(i8, i32)>) {
    (user.to_string(), 0, Some(String::new()), infos.to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upsert_describe_delete() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    assert_eq!(describe(&broker, None).await, vec![]);

    // One mechanism per request, as kafka-configs must do it against Kafka.
    let r = alter(&broker, vec![], vec![upsert("alice", SHA256, 8192, "a")]).await;
    assert_eq!(r, vec![ok("alice")]);
    let r = alter(&broker, vec![], vec![upsert("alice", SHA512, 4096, "a")]).await;
    assert_eq!(r, vec![ok("alice")]);
    let r = alter(&broker, vec![], vec![upsert("bob", SHA512, 16384, "b")]).await;
    assert_eq!(r, vec![ok("bob")]);

    let all = vec![
        has("alice", &[(SHA256, 8192), (SHA512, 4096)]),
        has("bob", &[(SHA512, 16384)]),
    ];
    assert_eq!(describe(&broker, None).await, all);
    assert_eq!(describe(&broker, Some(&[])).await, all, "empty list: all");
    assert_eq!(
        describe(&broker, Some(&["bob"])).await,
        vec![has("bob", &[(SHA512, 16384)])]
    );

    // Replacing keeps one credential per mechanism.
    let r = alter(&broker, vec![], vec![upsert("bob", SHA512, 5000, "b2")]).await;
    assert_eq!(r, vec![ok("bob")]);
    assert_eq!(
        describe(&broker, Some(&["bob"])).await,
        vec![has("bob", &[(SHA512, 5000)])]
    );

    // Deleting one mechanism leaves the other; deleting the last removes the user.
    let r = alter(&broker, vec![delete("alice", SHA256)], vec![]).await;
    assert_eq!(r, vec![ok("alice")]);
    assert_eq!(
        describe(&broker, Some(&["alice"])).await,
        vec![has("alice", &[(SHA512, 4096)])]
    );
    // A deletion and an upsertion of different users in one request: deletions first.
    let r = alter(
        &broker,
        vec![delete("alice", SHA512)],
        vec![upsert("carol", SHA256, 4096, "c")],
    )
    .await;
    assert_eq!(r, vec![ok("alice"), ok("carol")]);
    assert_eq!(
        describe(&broker, None).await,
        vec![
            has("bob", &[(SHA512, 5000)]),
            has("carol", &[(SHA256, 4096)])
        ]
    );
    common::stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_carry_kafkas_codes_and_messages() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    let r = alter(&broker, vec![], vec![upsert("alice", SHA256, 4096, "a")]).await;
    assert_eq!(r, vec![ok("alice")]);

    use ResponseError::*;
    let cases: Vec<(Vec<_>, Vec<_>, Vec<_>)> = vec![
        (
            vec![],
            vec![upsert("u", 0, 4096, "x")],
            vec![refused(
                "u",
                UnsupportedSaslMechanism,
                "Unknown SCRAM mechanism",
            )],
        ),
        (
            vec![delete("alice", 3)],
            vec![],
            vec![refused(
                "alice",
                UnsupportedSaslMechanism,
                "Unknown SCRAM mechanism",
            )],
        ),
        (
            vec![],
            vec![upsert("u", SHA256, 4095, "x")],
            vec![refused("u", UnacceptableCredential, "Too few iterations")],
        ),
        (
            vec![],
            vec![upsert("u", SHA512, 16385, "x")],
            vec![refused("u", UnacceptableCredential, "Too many iterations")],
        ),
        (
            vec![],
            vec![upsert("", SHA256, 4096, "x")],
            vec![refused(
                "",
                UnacceptableCredential,
                "Username must not be empty",
            )],
        ),
        (
            vec![delete("alice", SHA512)],
            vec![],
            vec![refused(
                "alice",
                ResourceNotFound,
                "Attempt to delete a user credential that does not exist",
            )],
        ),
        (
            vec![delete("nobody", SHA256)],
            vec![],
            vec![refused(
                "nobody",
                ResourceNotFound,
                "Attempt to delete a user credential that does not exist",
            )],
        ),
        // The same user twice, even for two mechanisms (what `--add-config` with both sends).
        (
            vec![],
            vec![
                upsert("dave", SHA256, 4096, "x"),
                upsert("dave", SHA512, 4096, "x"),
                upsert("erin", SHA256, 4096, "x"),
            ],
            vec![
                ok("erin"),
                refused(
                    "dave",
                    DuplicateResource,
                    "A user credential cannot be altered twice in the same request",
                ),
            ],
        ),
        (
            vec![delete("alice", SHA256)],
            vec![upsert("alice", SHA512, 4096, "x")],
            vec![refused(
                "alice",
                DuplicateResource,
                "A user credential cannot be altered twice in the same request",
            )],
        ),
        (
            vec![delete("alice", SHA256), delete("alice", SHA256)],
            vec![],
            vec![refused(
                "alice",
                DuplicateResource,
                "A user credential cannot be altered twice in the same request",
            )],
        ),
        // A user's first refusal sticks: the later duplicate is not reported instead.
        (
            vec![],
            vec![
                upsert("frank", SHA256, 1, "x"),
                upsert("frank", SHA256, 4096, "x"),
            ],
            vec![refused(
                "frank",
                UnacceptableCredential,
                "Too few iterations",
            )],
        ),
    ];
    for (deletions, upsertions, want) in cases {
        let got = alter(&broker, deletions, upsertions).await;
        assert_eq!(got, want);
    }
    // Refused changes were not applied; the one valid user (erin) was.
    assert_eq!(
        describe(&broker, None).await,
        vec![
            has("alice", &[(SHA256, 4096)]),
            has("erin", &[(SHA256, 4096)])
        ]
    );

    // Describe: unknown and duplicated users, each in one row, in request order.
    assert_eq!(
        describe(&broker, Some(&["nobody", "alice", "erin", "alice"])).await,
        vec![
            (
                "nobody".to_string(),
                ResourceNotFound.code(),
                Some("Attempt to describe a user credential that does not exist: nobody".into()),
                vec![]
            ),
            (
                "alice".to_string(),
                DuplicateResource.code(),
                Some(
                    "Cannot describe SCRAM credentials for the same user twice in a single request: alice"
                        .into()
                ),
                vec![]
            ),
            has("erin", &[(SHA256, 4096)]),
        ]
    );
    common::stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_survive_a_restart_and_no_password_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    let up = upsert("alice", SHA256, 8192, "alice-secret");
    let salted = up.salted_password.clone();
    let r = alter(
        &broker,
        vec![],
        vec![up, upsert("bob", SHA512, 4096, "bob-secret")],
    )
    .await;
    assert_eq!(r, vec![ok("alice"), ok("bob")]);
    common::stop(broker).await;

    let file = std::fs::read_to_string(dir.path().join(skiff_broker::scram_store::FILE)).unwrap();
    for secret in ["alice-secret", "bob-secret"] {
        assert!(!file.contains(secret), "{file}");
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    assert!(
        !file.contains(&b64.encode(&salted)),
        "salted password on disk"
    );
    assert!(
        file.contains("stored_key=") && file.contains("iterations=8192"),
        "{file}"
    );

    let broker = common::broker(dir.path()).start().await;
    assert_eq!(
        describe(&broker, None).await,
        vec![
            has("alice", &[(SHA256, 8192)]),
            has("bob", &[(SHA512, 4096)])
        ]
    );
    let r = alter(&broker, vec![delete("bob", SHA512)], vec![]).await;
    assert_eq!(r, vec![ok("bob")]);
    common::stop(broker).await;

    let broker = common::broker(dir.path()).start().await;
    assert_eq!(
        describe(&broker, None).await,
        vec![has("alice", &[(SHA256, 8192)])]
    );
    common::stop(broker).await;
}

/// Runs one SCRAM exchange against the broker's store; true when the server accepts it and
/// its final message is the one the client expects.
fn login(broker: &Arc<Broker>, mechanism: ScramMechanism, user: &str, password: &str) -> bool {
    let mut server = ScramServer::new(mechanism, broker.scram.clone());
    let client = ScramClient::new(mechanism, user, "clientnonce42");
    let first = match server.step(&client.first(), 0) {
        Step::Continue(t) => t,
        _ => return false,
    };
    let (last, want_final) = client.last(&first, password);
    match server.step(&last, 0) {
        Step::Done(a) => {
            a.principal == format!("User:{user}") && a.server_final == Some(want_final)
        }
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scram_login_works_with_a_credential_stored_through_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    let r = alter(
        &broker,
        vec![],
        vec![upsert("alice", SHA256, 4096, "alice-secret")],
    )
    .await;
    assert_eq!(r, vec![ok("alice")]);
    let r = alter(
        &broker,
        vec![],
        vec![upsert("alice", SHA512, 4096, "alice-512")],
    )
    .await;
    assert_eq!(r, vec![ok("alice")]);
    assert!(login(
        &broker,
        ScramMechanism::Sha256,
        "alice",
        "alice-secret"
    ));
    assert!(login(&broker, ScramMechanism::Sha512, "alice", "alice-512"));
    assert!(!login(&broker, ScramMechanism::Sha256, "alice", "wrong"));
    assert!(!login(
        &broker,
        ScramMechanism::Sha512,
        "alice",
        "alice-secret"
    ));
    assert!(!login(
        &broker,
        ScramMechanism::Sha256,
        "bob",
        "alice-secret"
    ));
    common::stop(broker).await;

    // And after a restart, from the file.
    let broker = common::broker(dir.path()).start().await;
    assert!(login(
        &broker,
        ScramMechanism::Sha256,
        "alice",
        "alice-secret"
    ));
    common::stop(broker).await;
}
