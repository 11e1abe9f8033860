#!/usr/bin/env bash
# Evaluation as users run it: LiveCodeBench rows end to end with a date window, an interrupted eval resumed,
# refusals, and validation during training (eval.every) written, resumed and summarised.
# usage: test_eval_cli.sh GSPO_BINARY TEST_MODELS_DIR SOURCE_DIR PYTHON
set -u
GSPO="$1"; MODELS="$2"; SRC="$3"; PYTHON="${4:-/usr/bin/python3}"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
source "$(dirname "$0")/expect.sh"
# check NAME PYTHON_CODE ARGS...: the Python snippet exits 0 when the files say what they should
check() {
  local name="$1" code="$2"; shift 2
  if "$PYTHON" -c "$code" "$@"; then pass=$((pass+1)); else echo "FAIL $name"; fail=$((fail+1)); fi
}

# LiveCodeBench rows as they are (tests/eval/make_lcb_cases.py), the contest-date window, failure reasons and
# difficulty rows. A byte-level tiny model writes no fenced code: every sample is "no code found".
# LiveCodeBench's prompt is ~400 byte tokens: a byte-level tiny model with a 1024-token context.
LCB="$MODELS/lcb/lcb_rows.jsonl"
"$PYTHON" "$SRC/scripts/make_tiny_model.py" --out "$TMP/long.pt" --layers 1 --hidden 32 --heads 2 --kv-heads 1 \
  --max-seq-len 1024 >/dev/null
LEVAL=(eval -m "$TMP/long.pt" --set rollout.max_new_tokens=8 --no-progress)
EVAL=(eval -m "$MODELS/tiny.pt" --set rollout.max_new_tokens=8 --no-progress)
expect lcb-eval 0 "failed samples: no code found 8" -- "$GSPO" "${LEVAL[@]}" -d "$LCB" -k 2 --since 2024-08-01 --until 2024-12-31 -o "$TMP/lcb"
check lcb-summary "
import json, sys
s = json.load(open(sys.argv[1]))['datasets'][0]
ok = (s['problems'] == 4 and s['outside_dates'] == 1 and s['failures'] == {'no code found': 8}
      and sorted(s['by_difficulty']) == ['easy', 'medium'] and s['by_difficulty']['easy']['problems'] == 2
      and s['verifier'] == 'code' and s['avg@2'] == 0.0)
sys.exit(0 if ok else 1)" "$TMP/lcb/summary.json"
check lcb-samples "
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if len(lines) == 8 and all(l['failure'] == 'no code found' for l in lines) else 1)" "$TMP/lcb/samples.jsonl"

# Competition rows (#57, tests/data/competition) through gspo eval with a standings pack: attempts in order, verdicts,
# the difficulty rating's bound when nothing is solved, CodeElo's block.
"$PYTHON" -c "
import json, sys
rows = [[2000 - 5 * i, 0, 1000 + 3 * i] for i in range(300)]
json.dump({'contests': [{'id': '9001', 'problems': [{'index': i, 'points': 500} for i in 'ABC'], 'rows': rows}]},
          open(sys.argv[1], 'w'))" "$TMP/pack.json"
expect cf-eval 0 "difficulty rating: none solved (upper bound) <= 800" -- "$GSPO" "${LEVAL[@]}" -d "$SRC/tests/data/competition/problems.jsonl" -k 2 --standings "$TMP/pack.json" -o "$TMP/cf"
check cf-summary "
import json, sys
s = json.load(open(sys.argv[1]))['datasets'][0]
r, c = s['difficulty_rating'], s['codeelo']
ok = (r['kind'] == 'none solved (upper bound)' and r['rating'] == 800 and r['stderr'] is None
      and s['solved_at_attempt'] == {} and c['contests'][0]['points'] == 0 and c['contests'][0]['rank'] == 300)
sys.exit(0 if ok else 1)" "$TMP/cf/summary.json"
check cf-samples "
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ok = len(lines) == 6 and [l['attempt'] for l in lines] == [0, 1] * 3 and all(
    l['verdict'] == 'no code found' and l['first_accepted'] is None for l in lines)
sys.exit(0 if ok else 1)" "$TMP/cf/samples.jsonl"
expect cf-standings-not-competition 2 "none of the sets is made of competition rows" -- "$GSPO" "${EVAL[@]}" -d "$SRC/data/math_sample.jsonl" -k 1 --max-problems 1 --standings "$TMP/pack.json" -o "$TMP/cf2"
# gspo score checks the pack against the set before grading, as gspo eval does (it graded first, then failed)
"$PYTHON" -c "
import json, sys
p = json.load(open(sys.argv[1])); p['contests'][0]['id'] = '777'; json.dump(p, open(sys.argv[2], 'w'))" \
  "$TMP/pack.json" "$TMP/pack_other.json"
printf '{"index": 0, "response": "x"}\n{"index": 0, "response": "y"}\n{"index": 1, "response": "x"}\n{"index": 1, "response": "y"}\n{"index": 2, "response": "x"}\n{"index": 2, "response": "y"}\n' > "$TMP/cf_resp.jsonl"
expect score-standings-unrated 2 "does not rate the set 'problems'" -- "$GSPO" score -d "$SRC/tests/data/competition/problems.jsonl" -r "$TMP/cf_resp.jsonl" --standings "$TMP/pack_other.json"
expect score-standings-not-competition 2 "none of the sets is made of competition rows" -- "$GSPO" score -d "$SRC/data/math_sample.jsonl" -r "$TMP/cf_resp.jsonl" --standings "$TMP/pack.json"
expect lcb-bad-date 2 "eval.since must be a day written YYYY-MM-DD" -- "$GSPO" "${LEVAL[@]}" -d "$LCB" --since 2024-8-1 -o "$TMP/lcb2"
# Impossible days are refused, not compared as text (2024-02-30 would keep rows of March 1st).
expect lcb-no-month-13 2 "eval.since" -- "$GSPO" "${LEVAL[@]}" -d "$LCB" --since 2024-13-45 -o "$TMP/lcb2"
expect lcb-no-month-13-why 2 "has no month 13 (01-12)" -- "$GSPO" "${LEVAL[@]}" -d "$LCB" --since 2024-13-45 -o "$TMP/lcb2"
expect lcb-feb-30 2 "eval.until \"2024-02-30\" is not a day of the calendar (2024-02 has 29 days)" -- "$GSPO" "${LEVAL[@]}" -d "$LCB" --until 2024-02-30 -o "$TMP/lcb2"
expect lcb-feb-29-2023 2 "(2023-02 has 28 days)" -- "$GSPO" "${LEVAL[@]}" -d "$LCB" --until 2023-02-29 -o "$TMP/lcb2"
expect lcb-day-00 2 "eval.since \"2024-06-00\" is not a day of the calendar" -- "$GSPO" "${LEVAL[@]}" -d "$LCB" --since 2024-06-00 -o "$TMP/lcb2"
[ ! -e "$TMP/lcb2" ] && pass=$((pass+1)) || { echo "FAIL refused-dates-wrote-nothing"; fail=$((fail+1)); }
expect lcb-empty-window 3 "no row has a contest_date within [2030-01-01, -]" -- "$GSPO" "${LEVAL[@]}" -d "$LCB" --since 2030-01-01 -o "$TMP/lcb3"
expect dates-without-dates 3 "filter on contest_date, but no row has one" -- "$GSPO" "${EVAL[@]}" -d "$SRC/data/math_sample.jsonl" --since 2024-01-01 -o "$TMP/lcb4"

# An interrupted eval resumes after its last complete problem: the full run, then a copy cut in the middle of
# problem 3 (summary gone, a torn last line) continued.
MATH=(-d "$SRC/data/math_sample.jsonl" -k 2 --max-problems 5 --set rollout.prompts_per_step=2)
expect eval-full 0 "pass@2" -- "$GSPO" "${EVAL[@]}" "${MATH[@]}" -o "$TMP/full"
mkdir -p "$TMP/cut"; cp "$TMP/full/eval_state.json" "$TMP/cut/"
head -n 5 "$TMP/full/samples.jsonl" > "$TMP/cut/samples.jsonl"; printf '{"dataset": "math_sa' >> "$TMP/cut/samples.jsonl"
expect eval-resume 0 "resuming after 2 of 5 problems" -- "$GSPO" "${EVAL[@]}" "${MATH[@]}" -o "$TMP/cut"
check eval-resumed-files "
import json, sys
full = [json.loads(l) for l in open(sys.argv[1] + '/samples.jsonl')]
cut = [json.loads(l) for l in open(sys.argv[2] + '/samples.jsonl')]
key = lambda l: (l['index'], l['sample'])
same_prefix = sorted(cut, key=key)[:4] == sorted(full, key=key)[:4]
a, b = json.load(open(sys.argv[1] + '/summary.json')), json.load(open(sys.argv[2] + '/summary.json'))
sys.exit(0 if len(cut) == 10 and same_prefix and b['datasets'][0]['problems'] == 5 and
         sorted(map(key, cut)) == sorted(map(key, full)) else 1)" "$TMP/full" "$TMP/cut"
rm "$TMP/cut/summary.json"
expect eval-resume-other-settings 2 "holds an unfinished eval with other settings (samples (was 2, now 3))" -- "$GSPO" "${EVAL[@]}" -d "$SRC/data/math_sample.jsonl" -k 3 --max-problems 5 --set rollout.prompts_per_step=2 -o "$TMP/cut"
expect eval-finished-refused 2 "already holds a finished eval" -- "$GSPO" "${EVAL[@]}" "${MATH[@]}" -o "$TMP/full"
# gspo score reads an eval's samples.jsonl as it is: against its own set it agrees with the eval's summary; against
# another set it refuses by line (it used to grade them by index against the other set's problems and exit 0).
avg="$("$PYTHON" -c "import json,sys; print('%.3f' % json.load(open(sys.argv[1]))['datasets'][0]['avg@2'])" "$TMP/full/summary.json")"
expect score-eval-samples 0 "avg@2 $avg" -- "$GSPO" score -d "$SRC/data/math_sample.jsonl" -r "$TMP/full/samples.jsonl"
expect score-eval-samples-other-set 3 "samples.jsonl:1: a sample of dataset 'math_sample', but -d is" -- \
  "$GSPO" score -d "$SRC/data/code_sample.jsonl" -r "$TMP/full/samples.jsonl"

# Validation during training: every 2 steps and before the first, into validation.jsonl and the metrics lines;
# resumed runs continue the schedule without repeating or losing lines.
printf '{"prompt": "1+2=", "answer": "3"}\n{"prompt": "2+2=", "answer": "4"}\n{"prompt": "3+1=", "answer": "4"}\n' > "$TMP/val_a.jsonl"
printf '{"prompt": "0+4=", "answer": "4"}\n{"prompt": "2+3=", "answer": "5"}\n' > "$TMP/val_b.jsonl"
TRAIN=(train -c "$SRC/configs/tiny.yaml" --set "model.path=$MODELS/tiny_prior.pt" --set rollout.prompts_per_step=4
       --set rollout.group_size=4 --set logging.progress=false --set eval.every=2 --set eval.samples=3
       --set "eval.datasets=[$TMP/val_a.jsonl, $TMP/val_b.jsonl]" --set reward.kind=leading_integer
       --set checkpoint.every=2 --set train.output_dir="$TMP/tv")
expect train-validation 0 "validation   val/val_a/avg@3" -- "$GSPO" "${TRAIN[@]}" --set train.max_steps=3
expect train-validation-resume 0 "finished after step 5" -- "$GSPO" "${TRAIN[@]}" --set train.max_steps=5 --resume auto
check validation-files "
import json, sys
val = [json.loads(l) for l in open(sys.argv[1] + '/validation.jsonl')]
met = [json.loads(l) for l in open(sys.argv[1] + '/metrics.jsonl')]
steps = [v['step'] for v in val]
with_val = [m['step'] for m in met if 'val/val_b/pass@3' in m]
names = [d['dataset'] for d in val[0]['datasets']]
probs = [d['problems'] for d in val[0]['datasets']]
ok = steps == [0, 2, 3, 4, 5] and with_val == [2, 3, 4, 5] and names == ['val_a', 'val_b'] and probs == [3, 2]
ok = ok and [m['step'] for m in met] == [1, 2, 3, 4, 5]
sys.exit(0 if ok else (print(steps, with_val, names, probs) or 1))" "$TMP/tv"
# Validation of a competition set: the difficulty rating (here the none-solved bound: the tiny model writes no code),
# the attempt counts and, with eval.standings, CodeElo's block in validation.jsonl and its rating in the metrics line.
# The math set beside it gets no CodeElo block; a pack with no competition set, or one that rates none, is refused at
# start-up, before any step.
CFV=(train -c "$SRC/configs/tiny.yaml" --set "model.path=$TMP/long.pt" --set rollout.prompts_per_step=4
     --set rollout.group_size=4 --set logging.progress=false --set eval.every=1 --set eval.samples=2
     --set rollout.max_new_tokens=8 --set train.max_steps=1)
expect train-validation-cf 0 "CodeElo" -- "$GSPO" "${CFV[@]}" --set "eval.standings=$TMP/pack.json" \
  --set "eval.datasets=[$SRC/tests/data/competition/problems.jsonl, $TMP/val_a.jsonl]" --set train.output_dir="$TMP/tcf"
check validation-cf "
import json, sys
v = [json.loads(l) for l in open(sys.argv[1] + '/validation.jsonl')][-1]['datasets']
d, a = v[0], v[1]
m = [json.loads(l) for l in open(sys.argv[1] + '/metrics.jsonl')][-1]
c = d['codeelo']
ok = (d['difficulty_rating']['kind'] == 'none solved (upper bound)' and d['difficulty_rating']['rating'] == 800
      and d['solved_at_attempt'] == {} and d['checker_failures'] == 0)
ok = ok and c['contests'][0]['id'] == '9001' and c['contests'][0]['points'] == 0 and c['contests'][0]['rank'] == 300
ok = ok and m['val/problems/codeelo_rating'] == c['rating'] and 'codeelo' not in a
sys.exit(0 if ok else (print(d, m) or 1))" "$TMP/tcf"
expect train-validation-cf-no-competition 2 "eval.standings: standings pack" -- "$GSPO" "${CFV[@]}" \
  --set "eval.standings=$TMP/pack.json" --set "eval.datasets=[$TMP/val_a.jsonl]" --set train.output_dir="$TMP/tcf2"
[ ! -e "$TMP/tcf2/metrics.jsonl" ] && pass=$((pass+1)) || { echo "FAIL standings-refused-before-training"; fail=$((fail+1)); }
printf '{"contests": [{"id": "77", "problems": [{"index": "A"}], "rows": [[1, 0, 1500]]}]}' > "$TMP/other_pack.json"
expect train-validation-cf-other-pack 2 "does not rate the set 'problems'" -- "$GSPO" "${CFV[@]}" \
  --set "eval.standings=$TMP/other_pack.json" --set "eval.datasets=[$SRC/tests/data/competition/problems.jsonl]" \
  --set train.output_dir="$TMP/tcf3"
expect validation-needs-datasets 2 "eval.every > 0) needs eval.datasets" -- "$GSPO" train -c "$SRC/configs/tiny.yaml" --set eval.every=2 --set train.output_dir="$TMP/tv2"

echo "eval CLI tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
