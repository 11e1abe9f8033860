#!/usr/bin/env python3
"""N generated rows in verl's GSM8K schema (tests/golden/parquet_cases.py), written twice by pyarrow: as one parquet
file (pyarrow's default row groups and compression) and as JSONL, for bench_dataset_load.

    python3 bench/make_dataset_files.py N OUT_DIR   -> OUT_DIR/rows.parquet, OUT_DIR/rows.jsonl
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden"))
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from parquet_cases import GSM8K_SCHEMA, gsm8k_rows, write_jsonl  # noqa: E402

n, out = int(sys.argv[1]), sys.argv[2]
os.makedirs(out, exist_ok=True)
table = pa.Table.from_pylist(gsm8k_rows("train", n), GSM8K_SCHEMA)
pq.write_table(table, f"{out}/rows.parquet")
write_jsonl(f"{out}/rows.jsonl", table.to_pylist())
print(f"{n} rows: {os.path.getsize(out + '/rows.parquet')} bytes parquet, {os.path.getsize(out + '/rows.jsonl')} "
      "bytes JSONL")
