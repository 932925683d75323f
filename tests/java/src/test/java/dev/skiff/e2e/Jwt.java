package dev.skiff.e2e;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.interfaces.RSAPublicKey;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;

/**
 * OAUTHBEARER test tokens with the JDK only: an RSA key, its JWKS (kid skiff-test, RS256) for
 * the broker, and RS256 JWTs for sub alice, audience skiff. {@code java Jwt.java DIR} (source
 * launch, before the broker starts) writes DIR/jwt-key.pem and DIR/jwks.json.
 */
public final class Jwt {
    static final String KID = "skiff-test";
    static final String AUDIENCE = "skiff";
    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();

    private Jwt() {}

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        KeyPairGenerator gen = KeyPairGenerator.getInstance("RSA");
        gen.initialize(2048);
        KeyPair pair = gen.generateKeyPair();
        String pem = "-----BEGIN PRIVATE KEY-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                        .encodeToString(pair.getPrivate().getEncoded())
                + "\n-----END PRIVATE KEY-----\n";
        Files.writeString(dir.resolve("jwt-key.pem"), pem);
        RSAPublicKey pub = (RSAPublicKey) pair.getPublic();
        String jwks = String.format(
                "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"%s\",\"alg\":\"RS256\",\"use\":\"sig\",\"n\":\"%s\",\"e\":\"%s\"}]}",
                KID, unsigned(pub.getModulus()), unsigned(pub.getPublicExponent()));
        Files.writeString(dir.resolve("jwks.json"), jwks);
    }

    private static String unsigned(BigInteger v) {
        byte[] b = v.toByteArray();
        if (b.length > 1 && b[0] == 0) {
            b = java.util.Arrays.copyOfRange(b, 1, b.length);
        }
        return B64.encodeToString(b);
    }

    static PrivateKey load(Path pem) throws Exception {
        String body = Files.readString(pem)
                .replace("-----BEGIN PRIVATE KEY-----", "")
                .replace("-----END PRIVATE KEY-----", "")
                .replaceAll("\\s", "");
        return KeyFactory.getInstance("RSA")
                .generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(body)));
    }

    /** An RS256 JWT valid from now for {@code lifetimeS} seconds (negative: already expired). */
    static String sign(PrivateKey key, long lifetimeS) throws Exception {
        long now = System.currentTimeMillis() / 1000;
        long iat = lifetimeS < 0 ? now + lifetimeS - 600 : now;
        String header = "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"" + KID + "\"}";
        String claims = String.format(
                "{\"sub\":\"alice\",\"aud\":\"%s\",\"iat\":%d,\"exp\":%d}", AUDIENCE, iat, now + lifetimeS);
        String signing = B64.encodeToString(header.getBytes(StandardCharsets.UTF_8)) + "."
                + B64.encodeToString(claims.getBytes(StandardCharsets.UTF_8));
        Signature s = Signature.getInstance("SHA256withRSA");
        s.initSign(key);
        s.update(signing.getBytes(StandardCharsets.US_ASCII));
        return signing + "." + B64.encodeToString(s.sign());
    }
}
