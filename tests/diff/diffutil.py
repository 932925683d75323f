"""Comparing normalised outputs of the two brokers: a recursive diff naming each differing
path, an allow-list from KNOWN_DIFFERENCES.md, and a failure message that says, per
difference, what the request was and what Kafka and Skiff answered. Set DIFF_REPORT to a file
path to also append every unexplained difference there (one line each)."""

import fnmatch
import json
import os

from conftest import KNOWN


def differences(kafka, skiff, path=""):
    """[(path, kafka_value, skiff_value)] where the two normalised values differ."""
    if isinstance(kafka, dict) and isinstance(skiff, dict):
        out = []
        for k in sorted(set(kafka) | set(skiff), key=str):
            p = f"{path}/{k}"
            if k not in kafka:
                out.append((p, "<absent>", skiff[k]))
            elif k not in skiff:
                out.append((p, kafka[k], "<absent>"))
            else:
                out.extend(differences(kafka[k], skiff[k], p))
        return out
    if isinstance(kafka, list) and isinstance(skiff, list) and len(kafka) == len(skiff):
        out = []
        for i, (a, b) in enumerate(zip(kafka, skiff)):
            out.extend(differences(a, b, f"{path}[{i}]"))
        return out
    return [] if kafka == skiff else [(path or "/", kafka, skiff)]


def known(case, path):
    return any(fnmatch.fnmatchcase(f"{case}:{path}", pat) for pat in KNOWN)


def short(v, limit=300):
    s = v if isinstance(v, str) else json.dumps(v, default=str, sort_keys=True)
    return s if len(s) <= limit else s[:limit] + "..."


def check(case, request, kafka, skiff):
    """Fail with every difference between the two answers not allow-listed for `case`."""
    diffs = [d for d in differences(kafka, skiff) if not known(case, d[0])]
    if not diffs:
        return
    lines = [f"{case}: {len(diffs)} difference(s) for request {short(request)}"]
    for p, a, b in diffs:
        lines.append(f"  {case}:{p}\n    kafka: {short(a)}\n    skiff: {short(b)}")
    msg = "\n".join(lines)
    if os.environ.get("DIFF_REPORT"):
        with open(os.environ["DIFF_REPORT"], "a") as f:
            for p, a, b in diffs:
                f.write(f"{case}:{p}\trequest={short(request)}\tkafka={short(a)}\tskiff={short(b)}\n")
    raise AssertionError(msg)


class Collector:
    """Runs several cases and fails once at the end with all their differences."""

    def __init__(self):
        self.errors = []

    def check(self, case, request, kafka, skiff):
        try:
            check(case, request, kafka, skiff)
        except AssertionError as e:
            self.errors.append(str(e))

    def done(self):
        if self.errors:
            raise AssertionError("\n".join(self.errors))
