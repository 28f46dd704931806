"""Warns when processes of a cluster already run on this host (the Python benchmarks' check;
bench/local_cluster_lib.sh does the same for the shell ones): a benchmark shares the CPUs with
them, and its figures then say as much about them as about the code. On 2026-12-07 idle clusters
left over from profiling skewed a morning's figures."""

import subprocess
import sys

CLUSTER_PROCESSES = "^(yuebing-(master|store|bench|client)|mooncake_master)$"


def warn_stray_processes() -> None:
    """Prints a warning on stderr when any such process runs or sleeps (zombies and stopped ones
    use no CPU); nothing without pgrep."""
    try:
        found = subprocess.run(["pgrep", "-r", "R,S,D", "-d", " ", CLUSTER_PROCESSES],
                               capture_output=True, text=True)
    except OSError:
        return
    if found.returncode == 0:
        print(f"warning: processes of a cluster already running (pids {found.stdout.strip()}): "
              "this run's figures share the CPUs with them", file=sys.stderr)
