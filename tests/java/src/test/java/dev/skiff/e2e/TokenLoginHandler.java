package dev.skiff.e2e;

import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerTokenCallback;

/**
 * Client-side OAUTHBEARER login handler for the tests: hands the client the JWT given as the
 * JAAS option {@code token} as is. The lifetime the client is told is always ahead (so its
 * refresh thread stays quiet); whether the JWT itself has expired is for the broker to check.
 */
public final class TokenLoginHandler implements AuthenticateCallbackHandler {
    private String token;

    @Override
    public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> jaas) {
        for (AppConfigurationEntry e : jaas) {
            Object t = e.getOptions().get("token");
            if (t != null) {
                token = t.toString();
            }
        }
        if (token == null) {
            throw new IllegalArgumentException("TokenLoginHandler needs the JAAS option token=\"...\"");
        }
    }

    @Override
    public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
        for (Callback cb : callbacks) {
            if (!(cb instanceof OAuthBearerTokenCallback)) {
                throw new UnsupportedCallbackException(cb);
            }
            long now = System.currentTimeMillis();
            String value = token;
            ((OAuthBearerTokenCallback) cb).token(new OAuthBearerToken() {
                @Override
                public String value() {
                    return value;
                }

                @Override
                public Set<String> scope() {
                    return Set.of();
                }

                @Override
                public long lifetimeMs() {
                    return now + 300_000;
                }

                @Override
                public String principalName() {
                    return "alice";
                }

                @Override
                public Long startTimeMs() {
                    return now;
                }
            });
        }
    }

    @Override
    public void close() {}
}
