#!/usr/bin/env python3
"""Checks a recording of bench/scale/many_tables_job against the job's truth file (issue 31).

    check_truth.py REPORT_JSON TRUTH_FILE

REPORT_JSON: `edo report --json r.edodb` (a file, or - for stdin); TRUTH_FILE: the job's
"name rows lookups unique_rows" lines. Every table must be in the report with exact counts,
its rows, lookups and unique_rows equal to the truth. Prints "every table exact: yes" (exit 0)
or "every table exact: no" with the first differences (exit 1); a missing or unreadable file
exits 1 with one line naming it."""
import json
import sys


def main(argv):
    if len(argv) != 3:
        print("usage: check_truth.py REPORT_JSON TRUTH_FILE", file=sys.stderr)
        return 2
    try:
        report = json.load(sys.stdin if argv[1] == "-" else open(argv[1]))
        truth = {}
        with open(argv[2]) as f:
            for line in f:
                name, rows, lookups, unique = line.split()
                truth[name] = (int(rows), int(lookups), int(unique))
    except (OSError, ValueError) as e:
        print(f"check_truth: cannot read input: {e} (give the JSON of `edo report --json` and the job's truth file)",
              file=sys.stderr)
        return 1
    got = {t["name"]: t for t in report.get("tables", [])}
    wrong = []
    for name, (rows, lookups, unique) in truth.items():
        t = got.get(name)
        if t is None:
            wrong.append(f"{name}: not in the report")
            continue
        have = (t.get("rows"), t.get("lookups"), t.get("unique_rows"), t.get("counts"))
        if have != (rows, lookups, unique, "exact"):
            wrong.append(f"{name}: rows/lookups/unique_rows/counts {have}, truth ({rows}, {lookups}, {unique}, 'exact')")
    if not truth:
        wrong.append("the truth file lists no table")
    print(f"tables: {len(truth)} in the truth, {len(got)} in the report, {len(wrong)} wrong")
    for w in wrong[:10]:
        print("  " + w)
    print("every table exact: " + ("no" if wrong else "yes"))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
