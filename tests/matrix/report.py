#!/usr/bin/env python3
"""Renders the client-matrix results (the MATRIX_RESULTS TSV every client suite appends to)
as a markdown compatibility table: rows are clients, columns scenarios, cells PASS / FAIL /
SKIP / — (not run or not applicable), then notes (every FAIL's error, what PASS covered where
the suite said so) and the per-suite summary written by tests/matrix.sh.

    report.py RESULTS.tsv [--suites SUITES.tsv] [--diff DIFF.tsv] [--title T] [--update-readme README.md]

With --update-readme, the table replaces whatever is between `<!-- compat-matrix:begin -->`
and `<!-- compat-matrix:end -->` in that file (the markers must be there).
"""

import argparse
import re
import sys
from pathlib import Path

SCENARIOS = ["admin", "produce_consume", "compression", "groups", "offsets_for_times", "compaction",
             "transactions", "special"]
# client id -> (label, suite folder)
CLIENTS = {
    "rdkafka": ("rdkafka (Rust crate, bundled librdkafka)", "tests/rdkafka"),
    "kcat": ("kcat (Debian, librdkafka 2.0.2)", "tests/kcat"),
    "confluent-kafka": ("confluent-kafka (Python, librdkafka 2.16)", "tests/python"),
    "kafka-python": ("kafka-python 3.0", "tests/python"),
    "java": ("Java kafka-clients 4.4", "tests/java"),
    "kafka-cli": ("Kafka CLI tools 4.4", "tests/java"),
    "streams": ("Kafka Streams 4.4", "tests/java"),
    "connect": ("Kafka Connect (distributed)", "tests/connect"),
    "mirrormaker2": ("MirrorMaker 2", "tests/connect"),
    "franz-go": ("franz-go (Go)", "tests/go"),
    "kafkajs": ("kafkajs (Node)", "tests/node"),
    "platformatic-kafka": ("@platformatic/kafka (Node)", "tests/node"),
}
BEGIN, END = "<!-- compat-matrix:begin -->", "<!-- compat-matrix:end -->"
RANK = {"FAIL": 3, "PASS": 1, "SKIP": 0}


def load(path):
    """{(client, scenario): (status, [notes])}; several lines for one cell: the worst wins."""
    cells, bad = {}, []
    for n, line in enumerate(Path(path).read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) < 3 or parts[2] not in RANK:
            bad.append(f"line {n}: {line[:120]!r}")
            continue
        client, scenario, status = parts[0], parts[1], parts[2]
        note = parts[3] if len(parts) > 3 else ""
        old = cells.get((client, scenario))
        if old is None:
            cells[(client, scenario)] = (status, [note] if note else [])
        else:
            st = old[0] if RANK[old[0]] >= RANK[status] else status
            cells[(client, scenario)] = (st, old[1] + ([note] if note else []))
    return cells, bad


def load_suites(path):
    """tests/matrix.sh's suites TSV: suite, status (ran|missing|skipped), exit code, seconds, note."""
    rows = []
    if path and Path(path).is_file():
        for line in Path(path).read_text().splitlines():
            p = line.split("\t")
            if len(p) >= 4:
                rows.append((p[0], p[1], p[2], p[3], p[4] if len(p) > 4 else ""))
    return rows


def render(cells, suites, title):
    missing = {s[0] for s in suites if s[1] == "missing"}
    crashed = {s[0]: s[2] for s in suites if s[1] == "ran" and s[2] != "0"}
    errors = []
    out = [f"{title}", "", "| client | " + " | ".join(SCENARIOS) + " |",
           "|---|" + "---|" * len(SCENARIOS)]
    extra = sorted({c for c, _ in cells} - set(CLIENTS))
    for client in list(CLIENTS) + extra:
        label, suite = CLIENTS.get(client, (client, "?"))
        if suite in missing and not any(c == client for c, _ in cells):
            out.append(f"| {label} | " + " | ".join(["missing"] * len(SCENARIOS)) + " |")
            continue
        if suite in crashed and not any(c == client for c, _ in cells):
            out.append(f"| {label} | " + " | ".join(["**ERR**"] * len(SCENARIOS)) + " |")
            errors.append(f"- {client}: {suite} exited {crashed[suite]} without reporting any scenario")
            continue
        row = []
        for sc in SCENARIOS:
            st = cells.get((client, sc), ("—", []))[0]
            row.append(f"**{st}**" if st == "FAIL" else st)
        out.append(f"| {label} | " + " | ".join(row) + " |")
    out += ["", "PASS: the scenario's assertions passed; FAIL: at least one failed; SKIP: the suite skipped it; "
            "—: not run or not applicable to that client; missing: the suite is not in this checkout; "
            "ERR: the suite exited non-zero without reporting this client."]
    fails = [(c, s, v) for (c, s), v in sorted(cells.items()) if v[0] == "FAIL"]
    notes = [(c, s, v) for (c, s), v in sorted(cells.items()) if v[0] != "FAIL" and v[1]]
    if fails or errors:
        out += ["", "Failures:", ""]
        out += [f"- {c} / {s}: {'; '.join(v[1])[:400]}" for c, s, v in fails]
        out += errors
    if notes:
        out += ["", "<details><summary>What each cell covered</summary>", ""]
        out += [f"- {c} / {s}: {'; '.join(v[1])[:300]}" for c, s, v in notes]
        out += ["", "</details>"]
    if suites:
        out += ["", "| suite | result | time |", "|---|---|---|"]
        for name, status, code, secs, note in suites:
            res = {"ran": "ok" if code == "0" else f"exit {code}", "missing": "missing",
                   "skipped": "skipped"}.get(status, status)
            if note:
                res += f" ({note})"
            out.append(f"| {name} | {res} | {secs}s |" if secs not in ("", "-") else f"| {name} | {res} | - |")
    return "\n".join(out) + "\n"


def render_diff(path):
    """Summary of tests/diff's unexplained differences (DIFF_REPORT lines: case:path, request,
    kafka=..., skiff=...), one bullet per case with the differing fields."""
    by_case = {}
    for line in Path(path).read_text(errors="replace").splitlines():
        p = line.split("\t")
        if len(p) < 4:
            continue
        case, _, field = p[0].partition(":")
        # The suite's per-run topic/group names (diff-<test>-<pid>-<n>) would churn the README.
        kafka, skiff = (re.sub(r"diff-test_[A-Za-z0-9_.-]*?-\d+-\d+", "<name>", v.split("=", 1)[1]) for v in p[2:4])
        by_case.setdefault(case, []).append((field, kafka, skiff))
    if not by_case:
        return "\nDifferential suite (tests/diff): no unexplained difference from Apache Kafka 4.4.0.\n"
    out = ["", f"Differential suite (tests/diff): {sum(map(len, by_case.values()))} unexplained differences "
           f"from Apache Kafka 4.4.0 in {len(by_case)} cases (allowed ones: tests/diff/KNOWN_DIFFERENCES.md).", "",
           "<details><summary>Differences (field: Kafka's answer / Skiff's answer)</summary>", ""]
    for case, fields in sorted(by_case.items()):
        if len(fields) > 4:
            out.append(f"- `{case}`: {len(fields)} fields differ: " + ", ".join(f"`{f}`" for f, _, _ in fields)[:600])
        else:
            out.append(f"- `{case}`: " + "; ".join(f"`{f}`: {k[:140]} / {sk[:140]}" for f, k, sk in fields))
    out += ["", "</details>"]
    return "\n".join(out) + "\n"


def update_readme(readme, table):
    text = Path(readme).read_text()
    if BEGIN not in text or END not in text:
        sys.exit(f"{readme}: markers {BEGIN} / {END} not found")
    new = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: f"{BEGIN}\n{table}{END}", text,
                 count=1, flags=re.S)
    Path(readme).write_text(new)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--suites")
    ap.add_argument("--title", default="Client compatibility matrix")
    ap.add_argument("--diff", help="tests/diff's DIFF_REPORT file")
    ap.add_argument("--update-readme", metavar="README")
    a = ap.parse_args()
    cells, bad = load(a.results)
    table = render(cells, load_suites(a.suites), a.title)
    if a.diff and Path(a.diff).is_file():
        table += render_diff(a.diff)
    if bad:
        print("report: ignored malformed result lines:\n  " + "\n  ".join(bad), file=sys.stderr)
    sys.stdout.write(table)
    if a.update_readme:
        update_readme(a.update_readme, table)


if __name__ == "__main__":
    main()
