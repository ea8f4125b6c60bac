"""`python -I -S benchmarks/launch.py OUT.json -- CMD [ARGS...]`: one contender's exact wall
time and peak RSS as JSON, exiting with its exit code. Why: `ru_maxrss` keeps the high-water mark
a process had before `exec`, so a child forked from the harness (which imported dlt and DuckDB)
would report the harness's RSS; this bare interpreter (a few MB) forks, execs and `os.wait4`s."""

import json
import os
import sys
import time


def main() -> int:
    out_path, sep, *cmd = sys.argv[1:]
    if sep != "--" or not cmd:
        sys.stderr.write("usage: launch.py OUT.json -- CMD [ARGS...]\n")
        return 2
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    with open(out_path, "w") as out:
        json.dump(
            {"pid": pid, "wall_s": wall, "maxrss_kib": usage.ru_maxrss, "exit_code": code}, out
        )
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    raise SystemExit(main())
