"""Summarise the gzip trials: median throughput and ratio per level, as Markdown."""
import json
import statistics
import sys
from pathlib import Path

rows = {}
for f in sorted(Path(sys.argv[1]).glob("*/result.json")):
    r = json.loads(f.read_text())
    rows.setdefault(r["level"], []).append(r)

print("| level | passes | MB/s (median) | min..max MB/s | ratio |")
print("|---:|---:|---:|---:|---:|")
for level in sorted(rows):
    rs = rows[level]
    mbps = [r["in_bytes"] / r["ns"] * 1e3 for r in rs]
    ratio = rs[0]["in_bytes"] / rs[0]["out_bytes"]
    print(f"| {level} | {len(rs)} | {statistics.median(mbps):.1f} | "
          f"{min(mbps):.1f}..{max(mbps):.1f} | {ratio:.2f} |")
