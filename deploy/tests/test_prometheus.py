"""deploy/prometheus: the configuration, the alerting rules and their unit tests pass
promtool, and every alert is tested both firing and not firing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

PROM_DIR = Path(__file__).resolve().parents[1] / "prometheus"
PROMTOOL = shutil.which("promtool")

needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian package 'prometheus')")


def promtool(*args: str) -> None:
    proc = subprocess.run([PROMTOOL, *args], cwd=PROM_DIR, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, (
        f"promtool {' '.join(args)} exited {proc.returncode}\n"
        f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")


@needs_promtool
def test_check_config():
    promtool("check", "config", str(PROM_DIR / "prometheus.yml"))


@needs_promtool
def test_check_rules():
    promtool("check", "rules", str(PROM_DIR / "alerts.yml"))


@needs_promtool
def test_rules_unit_tests():
    promtool("test", "rules", str(PROM_DIR / "alerts_test.yml"))


def alert_rules() -> list[dict]:
    doc = yaml.safe_load((PROM_DIR / "alerts.yml").read_text())
    return [r for g in doc["groups"] for r in g["rules"] if "alert" in r]


def test_config_loads_the_rules():
    config = yaml.safe_load((PROM_DIR / "prometheus.yml").read_text())
    assert "alerts.yml" in config["rule_files"]
    jobs = [s["job_name"] for s in config["scrape_configs"]]
    assert "shardline" in jobs  # ShardlineDown selects up{job="shardline"}


def test_every_alert_is_complete():
    rules = alert_rules()
    assert len(rules) >= 10
    for rule in rules:
        name = rule["alert"]
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, name
        assert rule["annotations"].get("summary"), name
        assert rule["annotations"].get("description"), name
        assert "for" in rule, f"{name}: no 'for' (write 'for: 0s' to fire at once)"


def test_every_alert_has_a_firing_and_a_quiet_case():
    names = {r["alert"] for r in alert_rules()}
    doc = yaml.safe_load((PROM_DIR / "alerts_test.yml").read_text())
    assert doc["rule_files"] == ["alerts.yml"]
    firing, quiet = set(), set()
    for test in doc["tests"]:
        for case in test.get("alert_rule_test", []):
            (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
    assert names - firing == set(), "alerts never tested firing"
    assert names - quiet == set(), "alerts never tested not firing"
    assert (firing | quiet) - names == set(), "tests of alerts that do not exist"


def test_readme_explains_every_alert():
    readme = (PROM_DIR / "README.md").read_text()
    for name in {r["alert"] for r in alert_rules()}:
        assert f"`{name}`" in readme, f"{name} is not described in deploy/prometheus/README.md"
