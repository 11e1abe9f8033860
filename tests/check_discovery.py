"""Every Catch2 test case of gspo_tests is a ctest test. catch_discover_tests passes the names through CMake lists, where
a ';' splits a name and an unbalanced '[' or ']' merges or drops the names after it: such cases silently never run.

    check_discovery.py GSPO_TESTS_BINARY CTEST_COMMAND TESTS_BUILD_DIR
"""
import subprocess
import sys


def main() -> int:
    binary, ctest, build_dir = sys.argv[1:4]
    # (Catch2 v2 exits with the number of cases listed: not an error)
    listed = subprocess.run([binary, "--list-test-names-only"], capture_output=True, text=True).stdout
    cases = {line for line in listed.splitlines() if line.strip()}
    out = subprocess.run([ctest, "-N"], cwd=build_dir, capture_output=True, text=True, check=True).stdout
    registered = set()
    for line in out.splitlines():
        head, sep, name = line.partition(": ")
        if sep and head.strip().startswith("Test") and "#" in head:
            registered.add(name)
    missing = sorted(cases - registered)
    print(f"{len(cases)} Catch test cases, {len(registered)} ctest tests, {len(missing)} cases not registered")
    for name in missing[:50]:
        print(f"  not in ctest: {name}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
