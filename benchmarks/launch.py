"""Start one contender and report its exact wall time and peak RSS as JSON.

    python -I -S benchmarks/launch.py OUT.json -- CMD [ARGS...]

Why a launcher: a process's `ru_maxrss` keeps the high-water mark of the address space it had
before `exec`. A child spawned straight from the harness (vfork/fork of a process that imported
dlt and DuckDB to read traces) would report the harness's RSS when its own is smaller. This
launcher is a bare interpreter (`-I -S`: stdlib only, a few MB), forks, execs the contender in
the fresh child and reaps it with `os.wait4`, so the reported peak is the contender's own (plus
at most this launcher's few MB, below any Python contender's floor). It exits with the
contender's exit code.
"""

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
