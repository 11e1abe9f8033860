#!/bin/sh
# The `lookup` tool of configs/tiny-tools.yaml (a command tool, docs/tools.md): for each JSON line
# {"name": "lookup", "arguments": {"input": "KEY?"}} on stdin it answers {"output": "D"}, D the secret digit of the
# number KEY (the same rule as scripts/make_tools_task.py); {"output": "no key"} when the input does not start with a
# number of 1 to 9 digits. POSIX sh, no Python: it runs while gspo trains. One line in, one line out, unbuffered.
while IFS= read -r line; do
  key=${line#*\"input\":\"}
  [ "$key" = "$line" ] && key=""
  key=${key%%[!0-9]*}
  key=${key#"${key%%[!0]*}"}  # leading zeros: $(( )) would read octal
  if [ -z "$key" ] || [ ${#key} -gt 9 ]; then
    printf '{"output":"no key"}\n'
  else
    printf '{"output":"%d"}\n' $(( ((key * 7919 + 17) % 104729) % 10 ))
  fi
done
