"""deploy/systemd: the unit passes `systemd-analyze verify`, its sandbox scores as intended,
and every flag and SHARDLINE_* variable it and the example environment file use exists in the
real binary's --help."""

import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("SHARDLINE_BIN", os.path.join(ROOT, "target", "debug", "shardline"))
UNIT = os.path.join(ROOT, "deploy", "systemd", "shardline.service")
ENV_FILE = os.path.join(ROOT, "deploy", "systemd", "shardline.env")
INSTALLED_BINARY = "/usr/local/bin/shardline"

needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None and not os.environ.get("CI"),
    reason="systemd-analyze not installed (test.sh installs the systemd package)",
)


def unit_text():
    with open(UNIT) as f:
        return f.read()


def unit_settings():
    """Key -> list of values of the [Service] section, continuation lines joined."""
    text = unit_text().replace("\\\n", " ")
    settings, section = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]":
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value.strip())
    return settings


def substituted_unit(tmp_path):
    """The unit with ExecStart pointing at the binary under test (verify needs it to exist)."""
    path = tmp_path / "shardline.service"
    path.write_text(unit_text().replace(INSTALLED_BINARY, BINARY))
    return path


def help_text():
    out = subprocess.run([BINARY, "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout


@needs_systemd_analyze
def test_the_unit_passes_systemd_analyze_verify(tmp_path):
    path = substituted_unit(tmp_path)
    out = subprocess.run(["systemd-analyze", "verify", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr.strip() == "", out.stderr


@needs_systemd_analyze
def test_the_sandbox_exposure_is_low(tmp_path):
    path = substituted_unit(tmp_path)
    out = subprocess.run(["systemd-analyze", "security", "--offline=true", str(path)],
                         capture_output=True, text=True, timeout=60)
    match = re.search(r"Overall exposure level for shardline\.service: ([0-9.]+)", out.stdout)
    assert match, out.stdout + out.stderr
    # 10 is an unsandboxed service; systemd calls below 4.5 "OK". This unit scores 3.0.
    assert float(match.group(1)) <= 3.5, out.stdout


def test_the_unit_sets_what_the_server_needs():
    s = unit_settings()
    assert s["User"] == ["shardline"] and s["Group"] == ["shardline"]
    assert s["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert s["LimitMEMLOCK"] == ["64M"]
    assert int(s["LimitNOFILE"][0]) >= 10000 + 64  # --maxclients' default and the server's own
    assert s["NoNewPrivileges"] == ["true"] and s["ProtectSystem"] == ["strict"]
    # --data-dir is the StateDirectory, the one path ProtectSystem=strict leaves writable.
    exec_start = s["ExecStart"][0].split()
    data_dir = exec_start[exec_start.index("--data-dir") + 1]
    assert data_dir == "/var/lib/" + s["StateDirectory"][0]
    assert s["EnvironmentFile"] == ["-/etc/shardline/shardline.env"]


def test_every_flag_and_variable_exists_in_the_binary():
    helptext = help_text()
    exec_start = unit_settings()["ExecStart"][0].split()
    assert exec_start[0] == INSTALLED_BINARY
    flags = [word for word in exec_start if word.startswith("--")]
    assert len(flags) >= 6, exec_start
    for flag in flags:
        assert re.search(r"\s" + re.escape(flag) + r"\b", helptext), f"{flag} not in --help"
    with open(ENV_FILE) as f:
        variables = set(re.findall(r"\b(SHARDLINE_[A-Z_]+)=", f.read()))
    assert len(variables) >= 5, variables
    for variable in variables:
        assert re.search(r"\[env: " + variable + r"[=\]]", helptext), f"{variable} not in --help"
