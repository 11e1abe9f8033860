#!/usr/bin/env python3
"""Parquet datasets with the exact schemas users bring, each with a JSONL twin holding the same rows, both written by
pyarrow (the independent reference for gspo's Arrow C++ reader, src/gspo/data/parquet.cpp; tests/unit/test_parquet.cpp
reads both and compares them field by field). The twin is what pyarrow itself reads back from the parquet file
(pq.read_table(...).to_pylist()), except in types.parquet, whose twin is the rows the table was built from (a float32
column's values are read by gspo as the shortest decimal of the float: 0.1, where to_pylist widens to 0.1000000015).

    python3 tests/golden/parquet_cases.py OUT_DIR   -> OUT_DIR/{gsm8k,dapo,trl,mixed,types}.{parquet,jsonl},
        OUT_DIR/shards/ (2 shards, README.md, and shards.jsonl beside it), bad inputs: truncated.parquet,
        corrupt.parquet, not_parquet.parquet, unsupported.parquet, null_prompt.parquet, bad_utf8.parquet, empty_dir/ (no .parquet file)
"""
import json
import os
import shutil
import sys

import pyarrow as pa
import pyarrow.parquet as pq

MESSAGES = pa.list_(pa.struct([("content", pa.string()), ("role", pa.string())]))
GSM8K_INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'


def gsm8k_rows(split, count, start=0):
    """Rows as verl's examples/data_preprocess/gsm8k.py writes them (data_source openai/gsm8k)."""
    rows = []
    for idx in range(start, start + count):
        question = f"Natalia sold clips to {idx + 3} friends, {idx} each. How many clips did she sell? ünïcødé ✓"
        answer = f"She sold {idx + 3} * {idx} = <<{idx + 3}*{idx}={(idx + 3) * idx}>>clips.\n#### {(idx + 3) * idx}"
        rows.append({
            "data_source": "openai/gsm8k",
            "prompt": [{"content": question + " " + GSM8K_INSTRUCTION, "role": "user"}],
            "ability": "math",
            "reward_model": {"ground_truth": str((idx + 3) * idx), "style": "rule"},
            "extra_info": {"answer": answer, "index": idx, "question": question, "split": split},
        })
    return rows


GSM8K_SCHEMA = pa.schema([
    ("data_source", pa.string()), ("prompt", MESSAGES), ("ability", pa.string()),
    ("reward_model", pa.struct([("ground_truth", pa.string()), ("style", pa.string())])),
    ("extra_info", pa.struct([("answer", pa.string()), ("index", pa.int64()), ("question", pa.string()),
                              ("split", pa.string())])),
])


def dapo_rows():
    """Rows of BytedTsinghua-SIA/DAPO-Math-17k (data_source math_dapo; extra_info holds a string index)."""
    prompt = ("Solve the following math problem step by step. The last line of your response should be of the form "
              "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n{}\n\nRemember to put "
              "your answer on its own line after \"Answer:\".")
    problems = [("Let $x^2 = 16$ with $x > 0$. Find $x$.", "4"),
                ("In triangle $ABC$, $\\angle A = 90^\\circ$, $AB = 3$, $AC = 4$. Find $BC$.", "5"),
                ("The answer is in the form $\\frac{k}{m}$. Give $k + m$ for $\\frac{1}{2} + \\frac{1}{3}$.", "11")]
    return [{"data_source": "math_dapo", "prompt": [{"content": prompt.format(p), "role": "user"}], "ability": "MATH",
             "reward_model": {"ground_truth": a, "style": "rule-lighteval/MATH_v2"},
             "extra_info": {"index": f"9a9b6eb4-a1cb-49d1-8c1e-62eaf2f74079-{i}"}} for i, (p, a) in enumerate(problems)]


DAPO_SCHEMA = pa.schema([
    ("data_source", pa.string()), ("prompt", MESSAGES), ("ability", pa.string()),
    ("reward_model", pa.struct([("ground_truth", pa.string()), ("style", pa.string())])),
    ("extra_info", pa.struct([("index", pa.string())])),
])


def trl_rows():
    """TRL's conversational prompt-only format (a "prompt" list of messages), with the "solution" column of the
    trl-lib math sets GRPOTrainer examples use."""
    return [{"prompt": [{"content": "You are a careful mathematician.", "role": "system"},
                        {"content": "What is 7 * 6?", "role": "user"}], "solution": "42"},
            {"prompt": [{"content": "Simplify $\\sqrt{50}$.", "role": "user"}], "solution": "5\\sqrt{2}"}]


TRL_SCHEMA = pa.schema([("prompt", MESSAGES), ("solution", pa.string())])


def mixed_rows():
    """A mixed math + code set as Skywork-OR1 and DeepScaleR-style sets ship through verl's preprocessing: data_source
    picks each row's reward (verl's default_compute_score names: numina_olympiads, openai/gsm8k -> math; taco,
    codeforces -> code; "deepscaler" is not in verl's table: a run maps it with reward.sources), the prompt a list of
    messages, reward_model.ground_truth the answer, or for code rows the tests as the JSON string prime_code reads
    ({"inputs": [...], "outputs": [...]}, stdin and stdout)."""
    def row(source, ability, question, truth, index):
        return {"data_source": source, "prompt": [{"content": question, "role": "user"}], "ability": ability,
                "reward_model": {"ground_truth": truth, "style": "rule"},
                "extra_info": {"index": index, "split": "train"}}
    sum_tests = json.dumps({"inputs": ["1 2\n", "10 -4\n"], "outputs": ["3\n", "6\n"]})
    square_tests = json.dumps({"inputs": ["3\n", "5\n"], "outputs": ["9\n", "25\n"]})
    return [row("numina_olympiads", "math", "What is 6*7? Put the answer in \\boxed{}.", "42", 0),
            row("taco", "code", "Read two integers and print their sum.", sum_tests, 1),
            row("deepscaler", "math", "Compute 1/2 + 1/3.", "\\frac{5}{6}", 2),
            row("codeforces", "code", "Read n and print n squared.", square_tests, 3),
            row("openai/gsm8k", "math", "What is 2+3?", "5", 4)]


MIXED_SCHEMA = pa.schema([
    ("data_source", pa.string()), ("prompt", MESSAGES), ("ability", pa.string()),
    ("reward_model", pa.struct([("ground_truth", pa.string()), ("style", pa.string())])),
    ("extra_info", pa.struct([("index", pa.int64()), ("split", pa.string())])),
])


def types_table():
    """Every type gspo reads, with nulls at every level; returns (table, rows it was built from)."""
    rows = [
        {"s": "a", "ls": "large", "i8": -128, "i16": -32768, "i32": -2147483648, "i64": -9223372036854775808,
         "u8": 255, "u16": 65535, "u32": 4294967295, "u64": 18446744073709551615, "f32": 0.1, "f64": 0.1,
         "b": True, "n": None, "st": {"x": 1, "inner": {"y": "deep"}, "tags": ["p", "q"]},
         "l": [1, 2, 3], "ll": ["x", None], "fl": [1.5, -2.25], "cat": "red", "msgs": [{"content": "c", "role": "user"}]},
        {"s": None, "ls": None, "i8": None, "i16": 7, "i32": None, "i64": 9223372036854775807, "u8": None, "u16": None,
         "u32": 0, "u64": None, "f32": None, "f64": -1e300, "b": False, "n": None,
         "st": {"x": None, "inner": None, "tags": None}, "l": [], "ll": None, "fl": None, "cat": "blue", "msgs": []},
        {"s": "", "ls": "ünïcødé ✓ \"quoted\" \\ \n", "i8": 0, "i16": None, "i32": 1, "i64": 0, "u8": 0, "u16": 1,
         "u32": None, "u64": 0, "f32": 1.5, "f64": None, "b": None, "n": None, "st": None, "l": None, "ll": [],
         "fl": None, "cat": None, "msgs": None},
    ]
    schema = pa.schema([
        ("s", pa.string()), ("ls", pa.large_string()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()),
        ("i64", pa.int64()), ("u8", pa.uint8()), ("u16", pa.uint16()), ("u32", pa.uint32()), ("u64", pa.uint64()),
        ("f32", pa.float32()), ("f64", pa.float64()), ("b", pa.bool_()), ("n", pa.null()),
        ("st", pa.struct([("x", pa.int64()), ("inner", pa.struct([("y", pa.string())])),
                          ("tags", pa.list_(pa.string()))])),
        ("l", pa.list_(pa.int32())), ("ll", pa.large_list(pa.string())), ("fl", pa.list_(pa.float64(), 2)),
        ("cat", pa.dictionary(pa.int8(), pa.string())), ("msgs", MESSAGES),
    ])
    return pa.Table.from_pylist(rows, schema), rows


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def write_case(out, name, rows, schema, row_group_size=None):
    """NAME.parquet from rows, and NAME.jsonl: what pyarrow reads back from it."""
    pq.write_table(pa.Table.from_pylist(rows, schema), f"{out}/{name}.parquet", row_group_size=row_group_size)
    write_jsonl(f"{out}/{name}.jsonl", pq.read_table(f"{out}/{name}.parquet").to_pylist())


def write_bad_inputs(out):
    good = open(f"{out}/gsm8k.parquet", "rb").read()
    with open(f"{out}/truncated.parquet", "wb") as f:
        f.write(good[: len(good) // 2])
    with open(f"{out}/corrupt.parquet", "wb") as f:  # footer intact, the first data page's header scrambled
        f.write(good[:8] + bytes((b * 7 + 13) & 255 for b in good[8:200]) + good[200:])
    with open(f"{out}/not_parquet.parquet", "w") as f:
        f.write('{"prompt": "a JSONL line in a file named .parquet"}\n')
    pq.write_table(pa.table({"prompt": ["What is 1+1?"], "answer": ["2"],
                             "when": pa.array([0], pa.timestamp("ms"))}), f"{out}/unsupported.parquet")
    pq.write_table(pa.table({"prompt": pa.array([[{"content": "What is 1+1?", "role": "user"}], None], MESSAGES),
                             "answer": ["2", "3"]}), f"{out}/null_prompt.parquet")
    pq.write_table(pa.table({"prompt": ["What is 1+1?", None], "answer": ["2", "3"]}), f"{out}/null_prompt_string.parquet")
    pq.write_table(pa.table({"question": ["What is 1+1?"], "answer": ["2"]}), f"{out}/no_prompt_column.parquet")
    # An answer column whose second string is not UTF-8 (Arrow's writer does not check; from_buffers skips validation).
    values = b"2" + b"ok \xff\xfe"
    offsets = b"".join(n.to_bytes(4, "little") for n in (0, 1, len(values)))
    answers = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(offsets), pa.py_buffer(values)])
    pq.write_table(pa.table({"prompt": ["What is 1+1?", "fine"], "answer": answers}), f"{out}/bad_utf8.parquet")
    os.makedirs(f"{out}/empty_dir/data")
    with open(f"{out}/empty_dir/README.md", "w") as f:
        f.write("a dataset card and no shards\n")


def main():
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(f"{out}/shards/data")
    write_case(out, "gsm8k", gsm8k_rows("train", 7), GSM8K_SCHEMA, row_group_size=3)  # 3 row groups
    write_case(out, "dapo", dapo_rows(), DAPO_SCHEMA)
    write_case(out, "trl", trl_rows(), TRL_SCHEMA)
    write_case(out, "mixed", mixed_rows(), MIXED_SCHEMA)
    table, rows = types_table()
    pq.write_table(table, f"{out}/types.parquet")
    write_jsonl(f"{out}/types.jsonl", rows)
    # The Hub's layout: DIR/data/train-0000K-of-00002.parquet beside a dataset card; shard order is the rows' order.
    shard_rows = [gsm8k_rows("train", 4, 0), gsm8k_rows("train", 3, 4)]
    for k, rs in enumerate(shard_rows):
        pq.write_table(pa.Table.from_pylist(rs, GSM8K_SCHEMA), f"{out}/shards/data/train-0000{k}-of-00002.parquet")
    with open(f"{out}/shards/README.md", "w") as f:
        f.write("---\nconfigs: [{config_name: default, data_files: [{split: train, path: data/train-*}]}]\n---\n")
    write_jsonl(f"{out}/shards.jsonl", pq.read_table(f"{out}/shards/data/train-00000-of-00002.parquet").to_pylist() +
                pq.read_table(f"{out}/shards/data/train-00001-of-00002.parquet").to_pylist())
    # Several splits in one directory: the Hub's data/SPLIT-0000K-of-0000N.parquet, and verl's train.parquet beside
    # test.parquet; each split's rows also as JSONL.
    os.makedirs(f"{out}/splits/data")
    os.makedirs(f"{out}/verl_splits")
    for split, rs in (("train", gsm8k_rows("train", 5, 0)), ("test", gsm8k_rows("test", 2, 0))):
        pq.write_table(pa.Table.from_pylist(rs, GSM8K_SCHEMA), f"{out}/splits/data/{split}-00000-of-00001.parquet")
        pq.write_table(pa.Table.from_pylist(rs, GSM8K_SCHEMA), f"{out}/verl_splits/{split}.parquet")
        write_jsonl(f"{out}/splits_{split}.jsonl", rs)
    write_bad_inputs(out)
    print(f"parquet cases written to {out}")


if __name__ == "__main__":
    main()
