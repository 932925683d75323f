//! The server's private key from PEM, as Kafka's PEM keystore reads it: unencrypted (PKCS#8,
//! or PKCS#1 / SEC1 as rustls reads them), or an encrypted PKCS#8 key
//! (`-----BEGIN ENCRYPTED PRIVATE KEY-----`) with `ssl.key.password`. Two encryption families:
//! - PBES2 (PBKDF2 or scrypt, then AES-CBC or 3DES-CBC): what `openssl pkcs8 -topk8` writes by
//!   default;
//! - the PKCS#12 scheme pbeWithSHAAnd3-KeyTripleDES-CBC (`-v1 PBE-SHA1-3DES`): the one Java 17
//!   can read, so the encrypted keys Kafka users have are usually in it. Its key derivation
//!   (RFC 7292, appendix B) is built here from SHA-1, 3DES and CBC.
//!
//! As in Kafka, `ssl.key.password` with an unencrypted key is an error, and so is an
//! encrypted key without it. OpenSSL's legacy encrypted PKCS#1 (`Proc-Type: 4,ENCRYPTED`) is
//! not read (Kafka does not read it either): the error says how to convert it.

use cbc::cipher::{block_padding::Pkcs7, BlockDecryptMut, KeyIvInit};
use pkcs8::der::asn1::{ObjectIdentifier, OctetStringRef};
use pkcs8::der::{AnyRef, Decode, Reader, SliceReader};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use sha1::{Digest, Sha1};

/// pbeWithSHAAnd3-KeyTripleDES-CBC (RFC 7292, appendix C).
const PBE_SHA1_3DES: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.12.1.3");
/// More iterations than this are refused before any work (a hostile file could ask for 2^31).
const MAX_ITERATIONS: u64 = 10_000_000;
/// scrypt memory (128 · N · r bytes) above this is refused before any work; OpenSSL's own
/// `-scrypt` defaults need 16 MiB.
const MAX_SCRYPT_MEMORY: u64 = 256 << 20;

/// The private key in `pem`; `password` is `ssl.key.password`; `what` names the source in
/// errors (which never contain the password).
pub fn private_key(
    pem: &[u8],
    password: Option<&str>,
    what: &str,
) -> Result<PrivateKeyDer<'static>, String> {
    let text = String::from_utf8_lossy(pem);
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(format!(
            "{what}: the private key is in OpenSSL's legacy encrypted form, which Kafka does not read either: convert it to encrypted PKCS#8, e.g. `openssl pkcs8 -topk8 -v1 PBE-SHA1-3DES -in key.pem -out key.p8.pem`"
        ));
    }
    let encrypted = pem_block(&text, "ENCRYPTED PRIVATE KEY");
    match (encrypted, password) {
        (Some(der), Some(password)) => decrypt(&der?, password)
            .map(|k| PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(k)))
            .map_err(|e| format!("{what}: {e}")),
        (Some(_), None) => Err(format!(
            "{what}: the private key is encrypted: set ssl.key.password"
        )),
        (None, Some(_)) => Err(format!(
            "{what}: ssl.key.password is set but the private key is not encrypted (as in Kafka, remove ssl.key.password or give an ENCRYPTED PRIVATE KEY)"
        )),
        (None, None) => PrivateKeyDer::from_pem_slice(pem).map_err(|e| {
            format!("{what}: no usable private key (PKCS#8, PKCS#1 or SEC1 PEM): {e}")
        }),
    }
}

/// The DER of the first PEM block labelled `label`, if there is one.
fn pem_block(text: &str, label: &str) -> Option<Result<Vec<u8>, String>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)? + begin.len();
    let Some(len) = text[start..].find(&end) else {
        return Some(Err(format!("no {end} line")));
    };
    let body: String = text[start..start + len]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    Some(base64_decode(&body).ok_or_else(|| format!("{label}: bad base64")))
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

/// Decrypts an `EncryptedPrivateKeyInfo` to the DER of its PKCS#8 `PrivateKeyInfo`.
fn decrypt(der: &[u8], password: &str) -> Result<Vec<u8>, String> {
    let (algorithm, parameters, data) =
        split(der).map_err(|e| format!("unreadable encrypted private key: {e}"))?;
    let plain = if algorithm == PBE_SHA1_3DES {
        let (salt, iterations) = parameters
            .ok_or("pbeWithSHAAnd3-KeyTripleDES-CBC without parameters")
            .and_then(|p| pbe_parameters(&p).map_err(|_| "bad PBE parameters"))
            .map_err(str::to_string)?;
        pkcs12_3des_decrypt(password, &salt, iterations, &data)?
    } else {
        let info = pkcs8::EncryptedPrivateKeyInfo::from_der(der)
            .map_err(|e| format!("unsupported key encryption {algorithm}: {e}"))?;
        bounded_work(&info.encryption_algorithm)?;
        info.decrypt(password.as_bytes())
            .map_err(|_| wrong_password())?
            .as_bytes()
            .to_vec()
    };
    // A wrong password usually fails the padding; when it does not, the result is not DER.
    pkcs8::PrivateKeyInfo::from_der(&plain).map_err(|_| wrong_password())?;
    Ok(plain)
}

/// Refuses PBES2 parameters that would take minutes or gigabytes to derive the key from.
fn bounded_work(scheme: &pkcs8::pkcs5::EncryptionScheme<'_>) -> Result<(), String> {
    use pkcs8::pkcs5::pbes2::Kdf;
    let Some(params) = scheme.pbes2() else {
        return Ok(());
    };
    match &params.kdf {
        Kdf::Pbkdf2(p) if u64::from(p.iteration_count) > MAX_ITERATIONS => Err(format!(
            "PBKDF2 iteration count {} is above {MAX_ITERATIONS}",
            p.iteration_count
        )),
        Kdf::Scrypt(p) => {
            let memory = 128u64
                .saturating_mul(p.cost_parameter)
                .saturating_mul(u64::from(p.block_size));
            if memory > MAX_SCRYPT_MEMORY || p.parallelization > 16 {
                Err(format!(
                    "scrypt parameters (N={}, r={}, p={}) need more than {} MiB or 16 lanes",
                    p.cost_parameter,
                    p.block_size,
                    p.parallelization,
                    MAX_SCRYPT_MEMORY >> 20
                ))
            } else {
                Ok(())
            }
        }
        _ => Ok(()),
    }
}

fn wrong_password() -> String {
    "cannot decrypt the private key: wrong ssl.key.password?".to_string()
}

type Split = (ObjectIdentifier, Option<Vec<u8>>, Vec<u8>);

/// `(algorithm, its parameters' DER, encrypted data)` of an `EncryptedPrivateKeyInfo`.
fn split(der: &[u8]) -> pkcs8::der::Result<Split> {
    let mut reader = SliceReader::new(der)?;
    let out = reader.sequence(|r| {
        let algorithm = r.sequence(|a| {
            let oid = ObjectIdentifier::decode(a)?;
            let parameters: Option<AnyRef<'_>> = a.decode()?;
            let parameters = match parameters {
                Some(p) => Some(pkcs8::der::Encode::to_der(&p)?),
                None => None,
            };
            Ok((oid, parameters))
        })?;
        let data = OctetStringRef::decode(r)?;
        Ok((algorithm.0, algorithm.1, data.as_bytes().to_vec()))
    })?;
    reader.finish(out)
}

/// `PBEParameter ::= SEQUENCE { salt OCTET STRING, iterations INTEGER }`.
fn pbe_parameters(der: &[u8]) -> pkcs8::der::Result<(Vec<u8>, u64)> {
    let any = AnyRef::from_der(der)?;
    any.sequence(|r| {
        let salt = OctetStringRef::decode(r)?;
        let iterations = u64::decode(r)?;
        Ok((salt.as_bytes().to_vec(), iterations))
    })
}

fn pkcs12_3des_decrypt(
    password: &str,
    salt: &[u8],
    iterations: u64,
    data: &[u8],
) -> Result<Vec<u8>, String> {
    if iterations == 0 || iterations > MAX_ITERATIONS {
        return Err(format!(
            "PBE iteration count {iterations} is outside 1..={MAX_ITERATIONS}"
        ));
    }
    let key = pkcs12_kdf(password, salt, iterations, 1, 24);
    let iv = pkcs12_kdf(password, salt, iterations, 2, 8);
    let cipher = cbc::Decryptor::<des::TdesEde3>::new_from_slices(&key, &iv)
        .map_err(|e| format!("3DES: {e}"))?;
    cipher
        .decrypt_padded_vec_mut::<Pkcs7>(data)
        .map_err(|_| wrong_password())
}

/// RFC 7292 appendix B.2 with SHA-1 (u = 20, v = 64): `n` bytes of key material for purpose
/// `id` (1 = key, 2 = IV) from the password as a BMPString (UTF-16BE, two zero bytes after).
fn pkcs12_kdf(password: &str, salt: &[u8], iterations: u64, id: u8, n: usize) -> Vec<u8> {
    const U: usize = 20;
    const V: usize = 64;
    let mut bmp: Vec<u8> = password
        .encode_utf16()
        .flat_map(|c| c.to_be_bytes())
        .collect();
    bmp.extend_from_slice(&[0, 0]);
    let stretch = |s: &[u8]| -> Vec<u8> {
        if s.is_empty() {
            return Vec::new();
        }
        let len = V * s.len().div_ceil(V);
        s.iter().cycle().take(len).copied().collect()
    };
    let mut i = stretch(salt);
    i.extend(stretch(&bmp));
    let d = [id; V];
    let mut out = Vec::with_capacity(n + U);
    while out.len() < n {
        let mut a: [u8; U] = Sha1::new()
            .chain_update(d)
            .chain_update(&i)
            .finalize()
            .into();
        for _ in 1..iterations {
            a = Sha1::digest(a).into();
        }
        out.extend_from_slice(&a);
        if out.len() >= n {
            break;
        }
        // I_j = (I_j + B + 1) mod 2^(8v) for each v-byte block, B = A repeated to v bytes.
        let b: Vec<u8> = a.iter().cycle().take(V).copied().collect();
        for block in i.chunks_mut(V) {
            let mut carry = 1u16;
            for k in (0..V).rev() {
                let sum = u16::from(block[k]) + u16::from(b[k]) + carry;
                block[k] = sum as u8;
                carry = sum >> 8;
            }
        }
    }
    out.truncate(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/keys");

    fn read(name: &str) -> Vec<u8> {
        std::fs::read(format!("{FIXTURES}/{name}")).unwrap()
    }

    fn der(key: PrivateKeyDer<'_>) -> Vec<u8> {
        key.secret_der().to_vec()
    }

    #[test]
    fn decrypts_the_pkcs12_and_pbes2_schemes_to_the_same_key() {
        let plain = der(private_key(&read("plain.pem"), None, "plain").unwrap());
        for name in [
            "pbe-sha1-3des.pem",
            "pbes2-aes256.pem",
            "pbes2-3des-sha1.pem",
        ] {
            let key = private_key(&read(name), Some("kafka-secret"), name).unwrap();
            assert_eq!(der(key), plain, "{name}");
        }
    }

    #[test]
    fn wrong_or_missing_passwords_and_mismatches_are_clear_errors() {
        for name in ["pbe-sha1-3des.pem", "pbes2-aes256.pem"] {
            let e = private_key(&read(name), Some("wrong"), name).unwrap_err();
            assert!(
                e.contains("wrong ssl.key.password") && !e.contains("\"wrong\""),
                "{e}"
            );
            let e = private_key(&read(name), None, name).unwrap_err();
            assert!(e.contains("set ssl.key.password"), "{e}");
        }
        let e = private_key(&read("plain.pem"), Some("kafka-secret"), "plain").unwrap_err();
        assert!(
            e.contains("not encrypted") && !e.contains("kafka-secret"),
            "{e}"
        );
        let legacy = b"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n-----END RSA PRIVATE KEY-----\n";
        let e = private_key(legacy, Some("x"), "legacy").unwrap_err();
        assert!(e.contains("legacy encrypted form"), "{e}");
    }

    #[test]
    fn hostile_iteration_counts_are_refused_before_any_work() {
        let e = pkcs12_3des_decrypt("p", b"salt", u64::from(u32::MAX), &[0; 16]).unwrap_err();
        assert!(e.contains("iteration count"), "{e}");
        // The same key re-encrypted by openssl with -iter 4000000000 would take hours.
        let der = pem_block(
            &String::from_utf8(read("pbes2-aes256.pem")).unwrap(),
            "ENCRYPTED PRIVATE KEY",
        )
        .unwrap()
        .unwrap();
        let mut info = pkcs8::EncryptedPrivateKeyInfo::from_der(&der).unwrap();
        let pkcs8::pkcs5::EncryptionScheme::Pbes2(params) = &mut info.encryption_algorithm else {
            panic!("the fixture is PBES2")
        };
        let pkcs8::pkcs5::pbes2::Kdf::Pbkdf2(kdf) = &mut params.kdf else {
            panic!("the fixture uses PBKDF2")
        };
        kdf.iteration_count = 4_000_000_000;
        let hostile = pkcs8::der::Encode::to_der(&info).unwrap();
        let e = decrypt(&hostile, "kafka-secret").unwrap_err();
        assert!(e.contains("PBKDF2 iteration count 4000000000"), "{e}");
    }

    #[test]
    fn kdf_matches_a_published_vector() {
        // The PKCS#12 test vector used by OpenSSL and Bouncy Castle: password "smeg".
        let salt = [0x0A, 0x58, 0xCF, 0x64, 0x53, 0x0D, 0x82, 0x3F];
        let hex = |b: Vec<u8>| b.iter().map(|x| format!("{x:02X}")).collect::<String>();
        assert_eq!(
            hex(pkcs12_kdf("smeg", &salt, 1, 1, 24)),
            "8AAAE6297B6CB04642AB5B077851284EB7128F1A2A7FBCA3"
        );
        assert_eq!(hex(pkcs12_kdf("smeg", &salt, 1, 2, 8)), "79993DFE048D3B76");
    }
}
