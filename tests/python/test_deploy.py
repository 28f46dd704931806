"""The operations files in deploy/ match what the binaries really accept and export.

A Grafana panel or alert on a metric the master does not export shows nothing, and a systemd unit
with a misspelled flag never starts: both are checked here against real processes.
"""
import json
import re
import subprocess
import urllib.request
from pathlib import Path
from typing import Set

import pytest

from conftest import master_binary, store_binary

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
METRIC = re.compile(r"\byuebing_[a-z_]+\b")


def exported_metric_names(metrics_port: int) -> Set[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    names = set()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def dashboard_metric_names() -> Set[str]:
    dashboard = json.loads((DEPLOY / "grafana" / "yuebing-dashboard.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert exprs, "the dashboard has no queries"
    return {name for expr in exprs for name in METRIC.findall(expr)}


def test_dashboard_and_alerts_query_only_exported_metrics(cluster):
    exported = exported_metric_names(cluster.metrics_port)
    wanted = dashboard_metric_names()
    wanted |= set(METRIC.findall((DEPLOY / "prometheus" / "yuebing.yml").read_text()))
    assert "yuebing_master_objects" in wanted
    missing = sorted(name for name in wanted if name not in exported)
    assert not missing, f"queried but not exported by yuebing-master: {missing}"


def unit_flags(unit: str) -> Set[str]:
    text = (DEPLOY / "systemd" / unit).read_text().replace("\\\n", " ")
    exec_line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    return set(re.findall(r"(?<!\S)--([a-z_]+)", exec_line))


@pytest.mark.parametrize("unit,binary", [("yuebing-master.service", master_binary),
                                         ("yuebing-store.service", store_binary)])
def test_systemd_units_use_flags_the_binaries_accept(unit, binary):
    path = binary()
    if not path.exists():
        pytest.skip(f"{path} not built (set YUEBING_BUILD_DIR)")
    flags = unit_flags(unit)
    assert flags, f"{unit} passes no flags"
    helpfull = subprocess.run([str(path), "--helpfull"], capture_output=True, text=True,
                              timeout=30)
    listed = set(re.findall(r"--([a-z_]+)", helpfull.stdout + helpfull.stderr))
    unknown = sorted(flags - listed)
    assert not unknown, f"{unit} passes flags {path.name} does not know: {unknown}"
