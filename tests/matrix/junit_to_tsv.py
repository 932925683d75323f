#!/usr/bin/env python3
"""Client-matrix lines from the Java suite's JUnit (surefire) XML reports.

    junit_to_tsv.py REPORT_DIR [--since EPOCH_SECONDS] >> $MATRIX_RESULTS

Each test class maps to (client, scenario) pairs below; methods listed under a class override
the class mapping. A scenario is PASS when all its test cases passed, FAIL when any failed or
errored (note: the failing cases and their messages), SKIP when all were skipped. Reports
older than --since (left over from an earlier run) are ignored; when none are left, every
scenario of the suite is reported FAIL ("no surefire reports"), since Maven did not run them.
"""

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

# class -> [(client, scenario)], or {method: [(client, scenario)], "*": default}
MAP = {
    "AdminTest": {"*": [("java", "admin")]},
    "ProduceConsumeTest": {"*": [("java", "produce_consume")],
                           "compressionCodecRoundTrip": [("java", "compression")]},
    "GroupTest": {"*": [("java", "groups")]},
    "OffsetsTest": {"*": [("java", "offsets_for_times")]},
    "CompactionTest": {"*": [("java", "compaction")]},
    "TransactionTest": {"*": [("java", "transactions")]},
    "StreamsEosTest": {"*": [("streams", "transactions"), ("streams", "special")]},
}
# ProduceConsumeTest.compressionCodecRoundTrip's @ValueSource, in order: surefire names the
# cases [1]..[5].
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
NOTES = {
    ("java", "compression"): "codecs: {params}",
    ("streams", "special"): "exactly_once_v2 word count; changelog and repartition topics created by Streams",
    ("streams", "transactions"): "exactly_once_v2 (transactional producer + read_committed)",
    ("java", "produce_consume"): "idempotent producer (default) + group consumer",
}


def scenarios_for(cls, method):
    m = MAP.get(cls.rsplit(".", 1)[-1])
    if m is None:
        return []
    base = method.split("(")[0].split("[")[0]
    return m.get(base, m["*"])


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    report_dir = Path(args[0])
    since = float(args[args.index("--since") + 1]) if "--since" in args else 0.0
    results = {}  # (client, scenario) -> [(case, status, message, param)]
    files = [f for f in sorted(report_dir.glob("TEST-*.xml")) if f.stat().st_mtime >= since]
    for f in files:
        root = ET.parse(f).getroot()
        for case in root.iter("testcase"):
            cls, name = case.get("classname", ""), case.get("name", "")
            status, msg = "PASS", ""
            for tag in ("failure", "error"):
                el = case.find(tag)
                if el is not None:
                    status = "FAIL"
                    msg = (el.get("message") or el.get("type") or tag).splitlines()[0][:160] if (
                        el.get("message") or el.get("type")) else tag
            if case.find("skipped") is not None:
                status = "SKIP"
            param = ""
            if name.startswith("compressionCodecRoundTrip") and name.endswith("]"):
                i = int(name.rsplit("[", 1)[1].rstrip("]"))
                param = CODECS[i - 1] if 0 < i <= len(CODECS) else f"[{i}]"
                name = f"compressionCodecRoundTrip[{param}]"
            for key in scenarios_for(cls, name):
                results.setdefault(key, []).append((f"{cls.rsplit('.', 1)[-1]}.{name}", status, msg, param))
    if not files:
        for m in MAP.values():
            for keys in m.values():
                for key in keys:
                    results.setdefault(key, [("-", "FAIL", "no surefire reports from this run", "")])
    for (client, scenario), cases in sorted(results.items()):
        failed = [c for c in cases if c[1] == "FAIL"]
        passed = [c for c in cases if c[1] == "PASS"]
        if failed:
            status, note = "FAIL", "; ".join(f"{c[0]}: {c[2]}" for c in failed)
        elif passed:
            status = "PASS"
            tmpl = NOTES.get((client, scenario), "{n} test(s)")
            note = tmpl.format(n=len(passed), params=" ".join(sorted({c[3] for c in passed if c[3]})))
        else:
            status, note = "SKIP", "all test cases skipped"
        note = note.replace("\t", " ").replace("\n", " ")[:300]
        print(f"{client}\t{scenario}\t{status}\t{note}")


if __name__ == "__main__":
    main()
