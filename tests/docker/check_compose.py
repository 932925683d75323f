#!/usr/bin/env python3
"""Static checks of docker/compose.yaml, docker/Dockerfile and config/docker.toml.

Used where no docker engine is available (tests/run.sh step "docker"; with an engine the step
also runs `docker compose config -q`). It checks that the three files agree with each other:
the service, its build, ports published on the host's loopback by default, named data volume,
config taken from the image (no bind mount), health check, restart policy, stop grace period and
the SKIFF_ADVERTISED_LISTENERS default, and that the Dockerfile's user, volume, ports,
entrypoint, command, stripped binary and frontend (no `# syntax=` line) match.
The image itself is built and run by tests/docker/e2e.sh.

Exit status 0 when everything holds; otherwise every failed check is printed and it exits 1.
"""

import pathlib
import re
import sys
import tomllib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker" / "compose.yaml"
SASL_SSL = ROOT / "docker" / "compose.sasl-ssl.yaml"
CONFIG_DOC = ROOT / "docs" / "configuration.md"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
CONFIG = ROOT / "config" / "docker.toml"

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
    return ok


def env_default(value):
    """`${VAR:-default}` -> default; a plain value -> itself."""
    m = re.fullmatch(r"\$\{[A-Z_]+:-(.*)\}", value)
    return m.group(1) if m else value


def split_port(spec):
    """Splits a short-syntax port at the colons outside `${...}`."""
    parts, depth, cur = [], 0, ""
    for ch in spec:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == ":" and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def main():
    compose = yaml.safe_load(COMPOSE.read_text())
    config = tomllib.loads(CONFIG.read_text())
    broker = config.get("broker", {})
    # TOML dotted keys nest; flatten the ones we need.
    def key(dotted):
        node = broker
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    services = compose.get("services", {})
    if not check("skiff" in services, "service `skiff` is defined"):
        return
    svc = services["skiff"]
    base = COMPOSE.parent

    build = svc.get("build", {})
    context = (base / build.get("context", ".")).resolve()
    check(context == ROOT, f"build context is the repository root (got {context})")
    dockerfile = context / build.get("dockerfile", "Dockerfile")
    check(dockerfile.resolve() == DOCKERFILE, f"build uses docker/Dockerfile (got {dockerfile})")
    check((ROOT / ".dockerignore").is_file(), ".dockerignore exists at the build context")

    # "${SKIFF_PUBLISH_ADDRESS:-127.0.0.1}:${SKIFF_HOST_PORT:-19092}:19092" -> defaults.
    ports = [str(p) for p in svc.get("ports", [])]
    defaults = [":".join(env_default(part) for part in split_port(p)) for p in ports]
    for port, what in ((19092, "HOST listener port"), (9644, "metrics port")):
        check(
            f"127.0.0.1:{port}:{port}" in defaults,
            f"{what} {port} is published on 127.0.0.1 by default (ports: {ports})",
        )
    check(
        all(p.startswith("${SKIFF_PUBLISH_ADDRESS:-127.0.0.1}:") for p in ports),
        "every published port's host address can be overridden with SKIFF_PUBLISH_ADDRESS",
    )

    volumes = svc.get("volumes", [])
    named = compose.get("volumes") or {}
    data = [v for v in volumes if str(v).split(":")[1:2] == ["/var/lib/skiff"]]
    check(len(data) == 1, "one volume is mounted at /var/lib/skiff")
    if data:
        name = str(data[0]).split(":")[0]
        check(name in named, f"volume `{name}` is a named volume declared at top level")
    # The image holds the config; a bind mount from the checkout breaks under umask 077.
    cfg = [v for v in volumes if "/etc/skiff" in str(v)]
    check(not cfg, f"config is not bind-mounted from the checkout (got {cfg})")

    hc = svc.get("healthcheck", {})
    test = hc.get("test", [])
    check(isinstance(test, list) and test[:1] in (["CMD"], ["CMD-SHELL"]), "healthcheck has a test")
    check("/dev/tcp/127.0.0.1/9092" in " ".join(map(str, test)), "healthcheck probes port 9092")
    for k in ("interval", "timeout", "retries"):
        check(k in hc, f"healthcheck sets {k}")

    check(svc.get("restart") == "unless-stopped", "restart: unless-stopped")
    check(svc.get("stop_grace_period") == "30s", "stop_grace_period: 30s")

    env = svc.get("environment", {})
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env)
    adv = env.get("SKIFF_ADVERTISED_LISTENERS")
    if check(adv is not None, "SKIFF_ADVERTISED_LISTENERS is set in the environment"):
        check("${SKIFF_ADVERTISED_LISTENERS" in adv, "SKIFF_ADVERTISED_LISTENERS can be overridden")
        check(
            env_default(adv) == key("advertised.listeners"),
            f"its default equals advertised.listeners in config/docker.toml ({env_default(adv)!r})",
        )
    command = svc.get("command", [])
    check(command == ["--config", "/etc/skiff/skiff.toml"], f"command loads the image's config ({command})")

    # config/docker.toml: the listeners the ports and the health check rely on.
    listeners = key("listeners") or ""
    check("DOCKER://0.0.0.0:9092" in listeners, "config binds DOCKER on 0.0.0.0:9092")
    check("HOST://0.0.0.0:19092" in listeners, "config binds HOST on 0.0.0.0:19092")
    check(key("log.dirs") == "/var/lib/skiff", "config keeps data in /var/lib/skiff")
    check(key("metrics.listener") == "0.0.0.0:9644", "config serves /metrics on 0.0.0.0:9644")
    timeout_ms = key("shutdown.timeout.ms")
    check(
        isinstance(timeout_ms, int) and timeout_ms < 30_000,
        "shutdown.timeout.ms is below stop_grace_period (30 s)",
    )
    hostname = svc.get("hostname") or "skiff"
    check(f"DOCKER://{hostname}:9092" in (key("advertised.listeners") or ""),
          "the DOCKER listener advertises the service's host name")

    # docker/Dockerfile: instructions the compose file and README depend on.
    text = DOCKERFILE.read_text()
    lines = [l.strip() for l in text.splitlines()]
    def has(prefix):
        return any(l.startswith(prefix) for l in lines)
    check(has("FROM rust:1-bookworm AS builder"), "builder stage is rust:1-bookworm")
    check(has("FROM debian:bookworm-slim"), "runtime stage is debian:bookworm-slim")
    check("cargo build --release -p skiff --locked" in text, "builder runs cargo build --release -p skiff --locked")
    check(has("USER skiff"), "runs as user skiff")
    check("--uid 10001" in text, "user skiff has uid 10001")
    check(has('VOLUME ["/var/lib/skiff"]'), "declares the data volume")
    check(has("EXPOSE 9092 19092 9644"), "exposes 9092, 19092 and the metrics port 9644")
    check(has('ENTRYPOINT ["skiff"]'), "entrypoint is skiff")
    check(has('CMD ["--config", "/etc/skiff/skiff.toml"]'), "default command loads /etc/skiff/skiff.toml")
    check(
        "install -D -m 0644 config/docker.toml /out/skiff.toml" in text
        and has("COPY --from=builder /out/skiff.toml /etc/skiff/skiff.toml"),
        "image carries config/docker.toml, mode 0644 whatever the checkout's umask",
    )
    check(not any(l.lower().startswith("# syntax=") for l in lines),
          "no `# syntax=` line (it makes every build fetch a frontend image)")
    check(has("ARG CARGO_PROFILE_RELEASE_DEBUG=0") and has("ARG CARGO_PROFILE_RELEASE_STRIP=symbols"),
          "the image's binary is built without debug info and stripped (build args)")
    check(has("HEALTHCHECK"), "image has a health check")


def check_sasl_ssl():
    """docker/compose.sasl-ssl.yaml (used on top of compose.yaml): every SKIFF_* variable it
    sets names a broker key (the env column of docs/configuration.md), the HOST listener is
    SASL_SSL with SCRAM, and the certificates come from the certs service's volume."""
    over = yaml.safe_load(SASL_SSL.read_text())
    services = over.get("services", {})
    svc = services.get("skiff", {})
    env = svc.get("environment", {})
    known = set(re.findall(r"`(SKIFF_[A-Z0-9_]+)`", CONFIG_DOC.read_text()))
    for var in env:
        check(var in known, f"{SASL_SSL.name}: {var} names a broker key (docs/configuration.md)")
    check("HOST:SASL_SSL" in str(env.get("SKIFF_LISTENER_SECURITY_PROTOCOL_MAP")),
          f"{SASL_SSL.name}: the HOST listener is SASL_SSL")
    check("SCRAM" in str(env.get("SKIFF_SASL_ENABLED_MECHANISMS")), f"{SASL_SSL.name}: SCRAM is enabled")
    check("certs" in services and (svc.get("depends_on") or {}).get("certs", {}).get("condition")
          == "service_completed_successfully", f"{SASL_SSL.name}: skiff waits for the certs service")
    keystore = str(env.get("SKIFF_SSL_KEYSTORE_LOCATION"))
    check(any(str(v).split(":")[1:2] == [keystore.rsplit("/", 1)[0]] for v in svc.get("volumes", [])),
          f"{SASL_SSL.name}: the keystore {keystore} is on a mounted volume")
    check("SKIFF_ADMIN_PASSWORD:?" in str(env.get("SKIFF_SASL_SCRAM_USERS")),
          f"{SASL_SSL.name}: the admin password must be given (no default password)")


if __name__ == "__main__":
    main()
    check_sasl_ssl()
    if failures:
        for f in failures:
            print(f"FAIL: {f}")
        sys.exit(1)
    print(f"{COMPOSE.relative_to(ROOT)}, {SASL_SSL.relative_to(ROOT)}, {DOCKERFILE.relative_to(ROOT)}, "
          f"{CONFIG.relative_to(ROOT)}: consistent")
