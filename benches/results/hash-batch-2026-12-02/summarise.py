#!/usr/bin/env python3
"""Medians over criterion-run*.txt of each bench's throughput point estimate (hashes/s)."""
import glob, re, statistics, sys

UNIT = {"elem/s": 1.0, "Kelem/s": 1e3, "Melem/s": 1e6}
rows = {}
for path in sorted(glob.glob(sys.argv[1] + "/criterion-run*.txt")):
    name = None
    for line in open(path):
        # The name starts a line (criterion puts "time:" on the next line for long names).
        m = re.match(r"^(sha512crypt_5000/\S+)(\s+time:.*)?$", line)
        if m:
            name = m.group(1).split("/", 1)[1]
        m = re.match(r"^\s+thrpt:\s+\[(.*)\]", line)
        if m and name:
            low, low_unit, mid, unit, high, high_unit = m.group(1).split()
            rows.setdefault(name, []).append(float(mid) * UNIT[unit])
            name = None
base = statistics.median(rows["scalar_one_at_a_time"])
xc = statistics.median(rows["libxcrypt_crypt_r"])
print("| bench | hashes/s per core (median) | runs | ÷ scalar one-at-a-time | ÷ libxcrypt |")
print("|---|---|---|---|---|")
for name, v in rows.items():
    med = statistics.median(v)
    runs = " / ".join(f"{x:.0f}" for x in v)
    print(f"| {name} | {med:.0f} | {runs} | {med / base:.2f}× | {med / xc:.2f}× |")
