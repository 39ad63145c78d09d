"""Checks of deploy/kubernetes/: schema validation of the core kinds (kubernetes-validate,
offline, when installed), the properties the deployment relies on, and a run of the real
server as the StatefulSet's container would start it: the image's entrypoint, the manifest's
environment, the Secrets made by the README's own commands and mounted as the kubelet lays
them out, and - when run as root - the image's UID, no capabilities and a read-only root file
system. The probes' exec commands then run against it, as do a users-file reload through
SIGHUP after a Secret update and a graceful stop.

The binary is $SHARDLINE_BIN (default <repo>/target/debug/shardline). Everything listens on
127.0.0.1 with ephemeral ports."""

from __future__ import annotations

import copy
import functools
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Iterator

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "kubernetes"
README = K8S / "README.md"
CONTAINERFILE = REPO / "deploy" / "container" / "Containerfile"
README_BLOCK_MARKER = "<!-- test_kubernetes.py runs the next block -->"
START_TIMEOUT_S = 20.0
RUN_TIMEOUT_S = 30.0


# --- the real binary --------------------------------------------------------------------------


def shardline_bin() -> Path:
    return Path(os.environ.get("SHARDLINE_BIN", str(REPO / "target" / "debug" / "shardline")))


def require_binary() -> Path:
    binary = shardline_bin()
    if not binary.is_file():
        pytest.fail(f"{binary} missing: build it (cargo build --bin shardline) or set SHARDLINE_BIN")
    return binary


@functools.lru_cache(maxsize=None)
def help_text() -> str:
    return subprocess.run([str(require_binary()), "--help"], capture_output=True, text=True,
                          timeout=30, check=True).stdout


def help_flags() -> set[str]:
    return set(re.findall(r"^\s+(?:-\w, )?(--[a-z0-9][a-z0-9-]*)", help_text(), re.M))


def help_env() -> set[str]:
    return set(re.findall(r"\[env: (SHARDLINE_[A-Z0-9_]+)=", help_text()))


# --- the manifests ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def documents() -> tuple[tuple[str, dict], ...]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs.append((path.name, doc))
    return tuple(docs)


def kinds(kind: str, file: str | None = None) -> list[dict]:
    return [d for f, d in documents() if d.get("kind") == kind and (file is None or f == file)]


def one(kind: str, file: str | None = None) -> dict:
    found = kinds(kind, file)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def statefulset() -> dict:
    return one("StatefulSet")


def pod_spec() -> dict:
    return statefulset()["spec"]["template"]["spec"]


def pod_labels() -> dict:
    return statefulset()["spec"]["template"]["metadata"]["labels"]


def container() -> dict:
    found = [c for c in pod_spec()["containers"] if c["name"] == "shardline"]
    assert len(found) == 1, "no container named shardline"
    return found[0]


def env_values() -> dict[str, dict]:
    return {e["name"]: e for e in container().get("env", [])}


def setting(flag: str, env: str) -> str | None:
    """The value the container gives the server for --flag / SHARDLINE_X (a flag wins)."""
    args = [*container().get("command", []), *container().get("args", [])]
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    entry = env_values().get(env)
    return None if entry is None else entry.get("value")


def container_port(name: str) -> int:
    ports = {p["name"]: p["containerPort"] for p in container().get("ports", []) if "name" in p}
    assert name in ports, f"no container port named {name!r}: {ports}"
    return ports[name]


def image_user() -> tuple[int, int]:
    users = re.findall(r"^USER\s+(\d+)(?::(\d+))?\s*$", CONTAINERFILE.read_text(), re.M)
    assert users, "the Containerfile has no numeric USER"
    uid, gid = users[-1]
    return int(uid), int(gid or uid)


def image_entrypoint() -> list[str]:
    found = re.findall(r"^ENTRYPOINT\s+(\[.*\])\s*$", CONTAINERFILE.read_text(), re.M)
    assert found, "the Containerfile has no exec-form ENTRYPOINT"
    return yaml.safe_load(found[-1])


def image_volumes() -> list[str]:
    volumes: list[str] = []
    for args in re.findall(r"^VOLUME\s+(.+)$", CONTAINERFILE.read_text(), re.M):
        volumes += yaml.safe_load(args) if args.strip().startswith("[") else args.split()
    return volumes


def probes() -> dict[str, dict]:
    return {kind: container()[kind] for kind in ("startupProbe", "readinessProbe", "livenessProbe")
            if kind in container()}


def mount_of(path: str) -> dict:
    """The container's volumeMount holding `path` (the longest mountPath that contains it)."""
    mounts = [m for m in container().get("volumeMounts", [])
              if path == m["mountPath"] or path.startswith(m["mountPath"].rstrip("/") + "/")]
    assert mounts, f"{path} is on no volume mount"
    return max(mounts, key=lambda m: len(m["mountPath"]))


def volume(name: str) -> dict:
    found = [v for v in pod_spec().get("volumes", []) if v["name"] == name]
    assert len(found) == 1, f"no volume {name!r}"
    return found[0]


def secret_file(path: str) -> tuple[str, str]:
    """(Secret name, key) of a file path that lies in a mounted Secret."""
    mount = mount_of(path)
    secret = volume(mount["name"]).get("secret")
    assert secret, f"{path} is not in a Secret volume"
    relative = path[len(mount["mountPath"].rstrip("/")) + 1:]
    items = {i["path"]: i["key"] for i in secret.get("items", [])}
    return secret["secretName"], items.get(relative, relative)


_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
             "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def quantity(value: object) -> Fraction:
    """A Kubernetes resource quantity ("2", "500m", "2Gi", "1e3") as an exact number."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?))",
                         str(value).strip())
    assert match, f"not a quantity: {value!r}"
    number = Fraction(match.group(1))
    if match.group(2) is not None:
        return number * Fraction(10) ** int(match.group(2))
    return number * _SUFFIXES[match.group(3)]


def duration_s(value: str) -> float:
    """humantime-style durations as the server takes them ("10s", "500ms", "1m")."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)", value):
        total += float(number) * units[unit]
    assert total > 0, f"cannot read duration {value!r}"
    return total


def shell_text(probe: dict) -> str:
    assert "exec" in probe, f"not an exec probe: {probe}"
    return " ".join(probe["exec"]["command"])


# --- the README's secret recipe ---------------------------------------------------------------


def readme_block() -> str:
    text = README.read_text()
    assert README_BLOCK_MARKER in text, f"{README.name} lost the marker of its tested block"
    match = re.compile(r"```(?:sh|bash)\n(.*?)```", re.S).search(text, text.index(README_BLOCK_MARKER))
    assert match, "no ```sh block after the marker"
    return match.group(1)


def readme_secrets() -> dict[str, dict]:
    """What the README's `kubectl create secret generic` commands put in each Secret."""
    text = README.read_text().replace("\\\n", " ")
    secrets: dict[str, dict] = {}
    for match in re.finditer(r"kubectl\b[^\n]*?\bcreate secret generic (\S+)([^\n]*)", text):
        name, rest = match.group(1), match.group(2)
        entry = {"type": (re.search(r"--type=(\S+)", rest) or [None, "Opaque"])[1],
                 "files": dict(re.findall(r"--from-file=([^=\s]+)=(\S+)", rest))}
        assert secrets.setdefault(name, entry) == entry, f"README creates {name} in two ways"
    assert secrets, "README has no `kubectl create secret generic` command"
    return secrets


# --- static tests -----------------------------------------------------------------------------


CORE_API_GROUPS = ("v1", "apps/v1")


def core_documents() -> list[tuple[str, dict]]:
    return [(f, d) for f, d in documents() if d.get("apiVersion") in CORE_API_GROUPS]


def test_every_yaml_file_parses_and_is_known():
    known = {"StatefulSet", "Service", "Secret", "PodMonitor", "Kustomization"}
    assert {d["kind"] for _, d in documents()} <= known
    assert len(core_documents()) >= 4


@pytest.mark.parametrize("version", ["1.27.0", "latest"])
def test_core_kinds_validate_against_the_kubernetes_schema(version):
    kv = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate")
    version = kv.latest_version() if version == "latest" else version
    for file, doc in core_documents():
        try:
            kv.validate(doc, version, strict=True)
        except kv.ValidationError as err:
            pytest.fail(f"{file}: {doc['kind']}/{doc['metadata']['name']}: {err}")


def test_schema_validation_catches_a_misspelt_field():
    kv = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate")
    broken = copy.deepcopy(statefulset())
    broken["spec"]["template"]["spec"]["containers"][0]["resourcez"] = {}
    with pytest.raises(kv.ValidationError):
        kv.validate(broken, kv.latest_version(), strict=True)


def test_kustomization_applies_the_manifests_but_not_the_example_secrets():
    kustomization = one("Kustomization")
    resources = kustomization["resources"]
    for name in resources:
        assert (K8S / name).is_file(), name
    assert {"statefulset.yaml", "services.yaml", "podmonitor.yaml"} <= set(resources)
    assert not [r for r in resources if "secret" in r]


def test_single_replica():
    # No replication: two replicas would be two unrelated key spaces behind one Service.
    assert statefulset()["spec"]["replicas"] == 1


def test_guaranteed_qos_with_whole_cpus():
    for c in [*pod_spec().get("initContainers", []), *pod_spec()["containers"]]:
        resources = c.get("resources", {})
        requests, limits = resources.get("requests", {}), resources.get("limits", {})
        for resource in ("cpu", "memory"):
            assert resource in limits, f"{c['name']}: no {resource} limit"
            assert quantity(requests.get(resource, limits[resource])) == quantity(limits[resource]), \
                f"{c['name']}: {resource} request != limit (not Guaranteed QoS)"
        cpu = quantity(limits["cpu"])
        assert cpu.denominator == 1 and cpu >= 1, f"{c['name']}: cpu {limits['cpu']} is not whole"


def test_smp_comes_from_the_cpu_limit():
    entry = env_values().get("SHARDLINE_SMP")
    assert entry and "valueFrom" in entry, "SHARDLINE_SMP must come from the CPU limit"
    ref = entry["valueFrom"]["resourceFieldRef"]
    assert ref["resource"] == "limits.cpu"
    assert quantity(ref.get("divisor", 1)) == 1
    assert ref.get("containerName", container()["name"]) == container()["name"]
    args = [*container().get("command", []), *container().get("args", [])]
    assert not any(a == "--smp" or a.startswith("--smp=") for a in args), "--smp overrides it"


def test_data_dir_is_the_persistent_volume_claim_and_the_image_volume():
    data_dir = setting("--data-dir", "SHARDLINE_DATA_DIR")
    assert data_dir and data_dir.startswith("/"), f"data dir {data_dir!r}"
    mounts = [m for m in container()["volumeMounts"] if m["mountPath"].rstrip("/") == data_dir.rstrip("/")]
    assert len(mounts) == 1, f"nothing mounted at {data_dir}"
    assert not mounts[0].get("readOnly", False) and not mounts[0].get("subPath")
    templates = {t["metadata"]["name"]: t for t in statefulset()["spec"]["volumeClaimTemplates"]}
    assert mounts[0]["name"] in templates, "the data dir is not a volumeClaimTemplate"
    assert mounts[0]["name"] not in {v["name"] for v in pod_spec().get("volumes", [])}
    claim = templates[mounts[0]["name"]]["spec"]
    assert claim["accessModes"] == ["ReadWriteOnce"]
    assert quantity(claim["resources"]["requests"]["storage"]) > 0
    assert data_dir.rstrip("/") in [v.rstrip("/") for v in image_volumes()]


def test_security_context_matches_the_image():
    uid, gid = image_user()
    pod = pod_spec()["securityContext"]
    assert pod["runAsNonRoot"] is True
    assert pod["runAsUser"] == uid != 0
    assert pod["runAsGroup"] == gid
    assert pod["fsGroup"] == gid
    own = container()["securityContext"]
    assert own["readOnlyRootFilesystem"] is True
    assert own["allowPrivilegeEscalation"] is False
    assert own["capabilities"]["drop"] == ["ALL"]
    assert not own.get("capabilities", {}).get("add")
    # RuntimeDefault on containerd >= 2.0 (and Docker >= 25) denies io_uring_setup.
    for ctx in (pod, own):
        assert ctx.get("seccompProfile", {}).get("type") != "RuntimeDefault"


def test_every_path_the_server_may_write_is_a_writable_volume():
    """With a read-only root file system the server may write only in the data dir: the TLS
    files and the users file must be given (else it generates them - into the data dir, which
    would be fine, but then they would not come from the Secrets)."""
    for flag, env in (("--tls-cert", "SHARDLINE_TLS_CERT"), ("--tls-key", "SHARDLINE_TLS_KEY"),
                      ("--users", "SHARDLINE_USERS")):
        path = setting(flag, env)
        assert path, f"{env} unset: the server would generate it"
        assert mount_of(path).get("readOnly") is True, f"{path} should be on a read-only mount"
        secret_file(path)


def secret_mounts() -> list[str]:
    secret_volumes = {v["name"] for v in pod_spec().get("volumes", []) if "secret" in v}
    return [m["mountPath"] for m in container()["volumeMounts"] if m["name"] in secret_volumes]


def test_secrets_hold_what_the_manifest_reads():
    """Every Secret file the server or a probe reads is a key that the README's commands and
    the example Secrets both provide."""
    readme = readme_secrets()
    example = {s["metadata"]["name"]: s for s in kinds("Secret", "secrets.example.yaml")}
    used = [setting(f, e) for f, e in (("--tls-cert", "SHARDLINE_TLS_CERT"),
                                        ("--tls-key", "SHARDLINE_TLS_KEY"),
                                        ("--tls-ca", "SHARDLINE_TLS_CA"),
                                        ("--users", "SHARDLINE_USERS"))]
    for probe in probes().values():
        used += re.findall(r"[^\s\"'()$]+", shell_text(probe))
    used = {p for p in used if p and any(p.startswith(m.rstrip("/") + "/") for m in secret_mounts())}
    assert len(used) >= 5, used  # certificate, key, users; CA and password for the probes
    for path in sorted(used):
        name, key = secret_file(path)
        assert name in readme, f"README never creates Secret {name}"
        assert key in readme[name]["files"], f"README's {name} has no key {key} (for {path})"
        assert name in example, f"secrets.example.yaml has no Secret {name}"
        assert key in example[name]["stringData"], f"example {name} has no key {key}"
    for name, secret in example.items():
        assert set(secret["stringData"]) == set(readme[name]["files"]), name
        assert secret["type"] == readme[name]["type"], name
    tls_name, _ = secret_file(setting("--tls-cert", "SHARDLINE_TLS_CERT"))
    assert readme[tls_name]["type"] == "kubernetes.io/tls"
    assert {"tls.crt", "tls.key"} <= set(readme[tls_name]["files"])


def test_example_secrets_hold_only_placeholders():
    for secret in kinds("Secret", "secrets.example.yaml"):
        assert "data" not in secret, "use stringData with visible placeholders"
        for key, value in secret["stringData"].items():
            assert "PLACEHOLDER" in value, f"{secret['metadata']['name']}/{key}"
            assert not re.search(r"^[A-Za-z0-9+/=]{40,}$", value, re.M), \
                f"{secret['metadata']['name']}/{key} looks like real key material"
            assert "$6$" not in value or re.search(r"\$6\$PLACEHOLDER\$", value)


def test_ports_and_binds_agree():
    assert setting("--bind", "SHARDLINE_BIND") == f"0.0.0.0:{container_port('redis-tls')}"
    assert setting("--metrics-bind", "SHARDLINE_METRICS_BIND") == f"0.0.0.0:{container_port('metrics')}"
    assert container_port("redis-tls") == 6380 and container_port("metrics") == 9180


def test_every_flag_and_variable_exists_in_shardline_help():
    args = [*container().get("command", []), *container().get("args", [])]
    flags = {a.split("=", 1)[0] for a in args if a.startswith("--")}
    assert flags <= help_flags(), f"unknown flags: {flags - help_flags()}"
    names = {n for n in env_values() if n.startswith("SHARDLINE_")}
    assert names <= help_env(), f"unknown variables: {names - help_env()}"
    assert "SHARDLINE_SMP" in names and "SHARDLINE_DATA_DIR" in names


def test_service_links_are_off():
    # Service links would add <SERVICE>_PORT... variables; for a Service named shardline*
    # they fall in the SHARDLINE_ namespace the server reads.
    assert pod_spec()["enableServiceLinks"] is False


def test_probes_are_tls_auth_ping_expecting_pong():
    found = probes()
    assert {"readinessProbe", "livenessProbe"} <= set(found)
    for kind, probe in found.items():
        text = shell_text(probe)
        assert "redis-cli" in text and re.search(r"--tls\b", text), kind
        assert re.search(r"--cacert \S+", text), kind
        assert "-h 127.0.0.1" in text, kind
        assert f"-p {container_port('redis-tls')}" in text, kind
        assert re.search(r"--user \S+", text), kind
        assert re.search(r"\bPING\b", text) and re.search(r"= ?\"?PONG\b", text), \
            f"{kind} must compare the reply with PONG (redis-cli exits 0 after NOAUTH)"
        assert "--pass " not in text and " -a " not in text, "password on the command line"
        assert probe.get("timeoutSeconds", 1) >= 2, kind
    liveness = found["livenessProbe"]
    assert liveness["periodSeconds"] * liveness["failureThreshold"] >= 60


def test_graceful_stop_fits_in_the_grace_period():
    timeout = duration_s(setting("--shutdown-timeout", "SHARDLINE_SHUTDOWN_TIMEOUT") or "5s")
    assert pod_spec()["terminationGracePeriodSeconds"] >= timeout + 5


def test_services_select_the_pods_and_name_real_ports():
    services = {s["metadata"]["name"]: s for s in kinds("Service")}
    headless = services[statefulset()["spec"]["serviceName"]]
    assert headless["spec"]["clusterIP"] == "None"
    clients = [s for s in services.values() if s["spec"].get("clusterIP") != "None"]
    assert clients, "no client Service"
    port_names = {p["name"] for p in container()["ports"]}
    for service in services.values():
        selector = service["spec"]["selector"]
        assert selector and selector.items() <= pod_labels().items(), service["metadata"]["name"]
        for port in service["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            assert target in port_names or target in {p["containerPort"] for p in container()["ports"]}
    for client in clients:
        ports = {p["port"]: p for p in client["spec"]["ports"]}
        assert 6380 in ports and ports[6380]["targetPort"] == "redis-tls"
        assert any(p["name"] == "metrics" for p in client["spec"]["ports"])
    assert statefulset()["spec"]["selector"]["matchLabels"].items() <= pod_labels().items()


def test_podmonitor_scrapes_the_metrics_port_of_these_pods():
    monitor = one("PodMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels().items()
    endpoints = monitor["spec"]["podMetricsEndpoints"]
    assert endpoints
    for endpoint in endpoints:
        assert container_port(endpoint["port"]) == container_port("metrics")
        assert endpoint.get("path", "/metrics") == "/metrics"
        assert endpoint.get("scheme", "http") == "http"


def test_readme_names_only_real_variables():
    named = set(re.findall(r"\bSHARDLINE_[A-Z0-9_]*[A-Z0-9]\b", README.read_text()))
    named.discard("SHARDLINE_BIN")
    assert named <= help_env(), f"README names unknown variables: {named - help_env()}"


# --- running it -------------------------------------------------------------------------------


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not installed")
    return path


def sandbox(argv: list[str], writable: list[Path] = (), pid_namespace: bool = False) -> list[str]:
    """argv run as the image's UID/GID without capabilities, on a read-only view of the root
    file system in which only `writable` stays writable (the pod's volumes)."""
    uid, gid = image_user()
    script = "".join(f"mount --bind {shlex.quote(str(p))} {shlex.quote(str(p))} && " for p in writable)
    script += 'mount -o remount,bind,ro / && exec "$@"'
    namespaces = ["unshare", "--mount"] + (["--pid", "--fork", "--kill-child"] if pid_namespace else [])
    setpriv = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
               "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    return [*namespaces, "--", "sh", "-c", script, "sh", *setpriv, *argv]


@functools.lru_cache(maxsize=None)
def sandbox_unavailable() -> str | None:
    """Why the sandbox cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return "not root (unshare and setpriv need it)"
    for name in ("unshare", "setpriv", "mount"):
        if shutil.which(name) is None:
            return f"{name} not installed"
    trial = subprocess.run(sandbox(["true"]), capture_output=True, text=True, timeout=10)
    return None if trial.returncode == 0 else f"sandbox failed: {trial.stderr.strip()}"


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def lay_out_secret(target: Path, files: dict[str, Path], mode: int, gid: int) -> None:
    """A Secret volume as the kubelet writes it: a timestamped directory, `..data` pointing at
    it and one symbolic link per key (an update swaps `..data`)."""
    target.mkdir(parents=True)
    os.chmod(target, 0o755)
    stamp = write_secret_version(target, files, mode, gid)
    os.symlink(stamp, target / "..data")
    for key in files:
        os.symlink(f"..data/{key}", target / key)


def write_secret_version(target: Path, files: dict[str, Path], mode: int, gid: int) -> str:
    stamp = f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.monotonic_ns()}"
    (target / stamp).mkdir()
    os.chmod(target / stamp, 0o755)
    for key, source in files.items():
        shutil.copyfile(source, target / stamp / key)
        os.chown(target / stamp / key, 0, gid)  # fsGroup owns the files
        os.chmod(target / stamp / key, mode | 0o040)  # ... and can read them
    return stamp


def translate(text: str, mounts: dict[str, Path], port: int | None = None) -> str:
    """A container path or command line made to run here: each volume's mount path becomes its
    host directory, and with `port` the client port (`-p 6380`) becomes the test server's."""
    for mount in sorted(mounts, key=len, reverse=True):
        text = re.sub(re.escape(mount.rstrip("/")) + r"(?=/|$|[\s\"')])", str(mounts[mount]), text)
    if port is not None:
        text = re.sub(rf"(-p\s+){container_port('redis-tls')}\b", rf"\g<1>{port}", text)
    return text


@dataclass
class Pod:
    """The StatefulSet's container, run here."""

    proc: subprocess.Popen
    init_pid: int  # PID 1 of the container: what kubelet and `kill -HUP 1` signal
    server_pid: int
    port: int
    metrics_port: int
    mounts: dict[str, Path]  # container path -> host directory
    env: dict[str, str]
    stderr: Path
    sandboxed: bool
    tini: bool
    secrets: dict[str, dict[str, Path]] = field(default_factory=dict)

    def log(self) -> str:
        return self.stderr.read_text(errors="replace")

    def host(self, path: str) -> str:
        return translate(path, self.mounts)

    def translate(self, text: str, mounts: dict[str, Path] | None = None) -> str:
        return translate(text, mounts or self.mounts, self.port)

    def run(self, argv: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
        argv = sandbox(argv) if self.sandboxed else argv
        return subprocess.run(argv, env=self.env, capture_output=True, text=True,
                              timeout=timeout, **kwargs)

    def probe(self, kind: str, mounts: dict[str, Path] | None = None) -> subprocess.CompletedProcess:
        probe = probes()[kind]
        argv = [self.translate(a, mounts) for a in probe["exec"]["command"]]
        return self.run(argv, timeout=probe.get("timeoutSeconds", 1) + 10)

    def stop(self, timeout: float) -> tuple[int | None, float]:
        """SIGTERM to PID 1 as the kubelet sends it; (exit code or None, seconds taken)."""
        started = time.monotonic()
        if self.proc.poll() is None:
            try:
                os.kill(self.init_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                for pid in (self.server_pid, self.init_pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                self.proc.wait(timeout=10)
                return None, time.monotonic() - started
        return self.proc.returncode, time.monotonic() - started


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="shardline-k8s-"))
    os.chmod(root, 0o755)  # the image's UID walks through it
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def secrets(scratch: Path) -> dict[str, dict[str, Path]]:
    """The README's recipe, run as written: certificate, key, CA, users file, passwords."""
    tool("openssl")
    work = scratch / "secrets"
    work.mkdir()
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", readme_block()], cwd=work,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, f"the README's block failed:\n{done.stdout}{done.stderr}"
    made: dict[str, dict[str, Path]] = {}
    for name, entry in readme_secrets().items():
        made[name] = {key: work / file for key, file in entry["files"].items()}
        for key, path in made[name].items():
            assert path.is_file() and path.stat().st_size > 0, f"{name}/{key}: {path} not made"
    return made


def usable_binary(scratch: Path) -> Path:
    """The binary, copied where the image's UID can run it if its own path is closed."""
    binary = require_binary().resolve()
    if all(os.stat(p).st_mode & 0o001 for p in binary.parents) and os.stat(binary).st_mode & 0o005 == 0o005:
        return binary
    copied = scratch / "bin" / "shardline"
    if not copied.exists():
        copied.parent.mkdir(mode=0o755)
        shutil.copy2(binary, copied)
        os.chmod(copied, 0o755)
    return copied


def start_pod(scratch: Path, name: str, secrets: dict[str, dict[str, Path]]) -> Pod:
    tool("redis-cli")
    reason = sandbox_unavailable()
    sandboxed = reason is None
    uid, gid = image_user()
    fs_group = pod_spec()["securityContext"]["fsGroup"]
    root = scratch / name
    root.mkdir(mode=0o755)
    volumes: dict[str, Path] = {}
    for spec in pod_spec().get("volumes", []):
        assert "secret" in spec, f"volume {spec['name']}: only Secret volumes are laid out here"
        secret = spec["secret"]
        files = secrets[secret["secretName"]]
        if secret.get("items"):
            files = {i["path"]: files[i["key"]] for i in secret["items"]}
        volumes[spec["name"]] = root / "volumes" / spec["name"]
        lay_out_secret(volumes[spec["name"]], files, secret.get("defaultMode", 0o644), fs_group)
    writable = []
    for template in statefulset()["spec"].get("volumeClaimTemplates", []):
        claim = root / "claims" / template["metadata"]["name"]
        claim.mkdir(parents=True)
        os.chown(claim, 0, fs_group)  # a fresh claim's root after the kubelet applied fsGroup
        os.chmod(claim, 0o2770)
        volumes[template["metadata"]["name"]] = claim
        writable.append(claim)
    mounts = {m["mountPath"]: volumes[m["name"]] for m in container()["volumeMounts"]}

    # The container's environment, with paths on the volumes and loopback ephemeral binds.
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "RUST_LOG": "info",
           "HOME": "/nonexistent"}
    image_env = re.findall(r"^\s*(?:ENV\s+)?(SHARDLINE_[A-Z0-9_]+)=(\S+?)\s*\\?$",
                           CONTAINERFILE.read_text(), re.M)
    env.update({name: translate(value, mounts) for name, value in image_env})
    for item in container().get("env", []):
        if "value" in item:
            env[item["name"]] = translate(str(item["value"]), mounts)
        elif item["valueFrom"].get("resourceFieldRef", {}).get("resource") == "limits.cpu":
            env[item["name"]] = "1"  # this machine's share; the manifest's value is checked above
        else:
            pytest.fail(f"cannot evaluate env {item['name']}: {item['valueFrom']}")
    env["SHARDLINE_BIND"] = "127.0.0.1:0"
    env["SHARDLINE_METRICS_BIND"] = "127.0.0.1:0"

    binary = usable_binary(scratch) if sandboxed else require_binary()
    entry = image_entrypoint()
    use_tini = sandboxed and shutil.which("tini") is not None and entry[0].endswith("/tini")
    if entry[0].endswith("/tini"):
        entry = [shutil.which("tini"), *entry[1:]] if use_tini else entry[entry.index("--") + 1:]
    argv = [str(binary) if a == "/usr/local/bin/shardline" else a for a in entry]
    argv += [translate(a, mounts) for a in [*container().get("command", []), *container().get("args", [])]]
    if sandboxed:
        argv = sandbox(argv, writable, pid_namespace=use_tini)
    workdir = translate(re.findall(r"^WORKDIR\s+(\S+)", CONTAINERFILE.read_text(), re.M)[-1], mounts)
    stderr = root / "stderr"
    with open(root / "stdout", "w") as out, open(stderr, "w") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                cwd=workdir if Path(workdir).is_dir() else root)
    pod = Pod(proc, proc.pid, proc.pid, 0, 0, mounts, env, stderr, sandboxed, use_tini, secrets)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        log = pod.log()
        listen = re.search(r"listening on 127\.0\.0\.1:(\d+)", log)
        metrics = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", log)
        if listen and metrics:
            pod.port, pod.metrics_port = int(listen.group(1)), int(metrics.group(1))
            try:
                socket.create_connection(("127.0.0.1", pod.port), timeout=1).close()
                break
            except OSError:
                pass
        if proc.poll() is not None:
            pytest.fail(f"the server exited with {proc.returncode} at start:\n{log}")
        if time.monotonic() > deadline:
            pod.stop(5)
            pytest.fail(f"the server was not listening within {START_TIMEOUT_S:.0f} s:\n{log}")
        time.sleep(0.05)
    if use_tini:  # unshare -> tini (PID 1 of the pod) -> shardline
        (pod.init_pid,) = children(proc.pid)
        (pod.server_pid,) = children(pod.init_pid)
    return pod


@pytest.fixture(scope="module")
def pod(scratch: Path, secrets: dict[str, dict[str, Path]]) -> Iterator[Pod]:
    running = start_pod(scratch, "pod", secrets)
    try:
        yield running
    finally:
        running.stop(15)


def probe_login(pod: Pod) -> tuple[str, Path]:
    """The probe's user and (on this host) its password file."""
    text = shell_text(probes()["readinessProbe"])
    return (re.search(r"--user (\S+)", text).group(1),
            Path(pod.host(re.search(r"cat (\S+?)\)", text).group(1))))


def redis_cli(pod: Pod, user: str, password_file: Path, *command: str) -> subprocess.CompletedProcess:
    cacert = pod.host(re.search(r"--cacert (\S+)", shell_text(probes()["readinessProbe"])).group(1))
    env = dict(pod.env, REDISCLI_AUTH=password_file.read_text().strip())
    return subprocess.run(["redis-cli", "--tls", "--cacert", cacert, "-h", "127.0.0.1",
                           "-p", str(pod.port), "--user", user, *command],
                          env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


@pytest.mark.parametrize("kind", ["startupProbe", "readinessProbe", "livenessProbe"])
def test_probe_passes_against_the_running_server(pod: Pod, kind: str):
    if kind not in probes():
        pytest.skip(f"no {kind}")
    done = pod.probe(kind)
    assert done.returncode == 0, f"{kind} failed: {done.stdout}{done.stderr}\n{pod.log()[-3000:]}"


def test_probe_fails_on_a_wrong_password(pod: Pod, scratch: Path):
    """redis-cli exits 0 after a refused AUTH; the probe must still fail."""
    password_path = re.search(r"cat (\S+?)\)", shell_text(probes()["livenessProbe"])).group(1)
    mount = mount_of(password_path)["mountPath"]
    wrong = scratch / "wrong-auth"
    shutil.copytree(pod.mounts[mount], wrong, symlinks=True)
    target = wrong / os.readlink(wrong / "..data") / Path(password_path).name
    os.chmod(target, 0o644)
    target.write_text("not-the-probe-password")
    done = pod.probe("livenessProbe", mounts={**pod.mounts, mount: wrong})
    assert done.returncode != 0
    assert "expected PONG" in done.stdout + done.stderr


def test_probe_fails_when_nothing_listens(pod: Pod):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        free_port = closed.getsockname()[1]
    probe = probes()["readinessProbe"]
    argv = [re.sub(rf"-p {pod.port}\b", f"-p {free_port}", pod.translate(a)) for a in probe["exec"]["command"]]
    assert pod.run(argv, timeout=RUN_TIMEOUT_S).returncode != 0


def test_server_runs_as_the_image_user_without_capabilities_on_a_read_only_root(pod: Pod):
    if not pod.sandboxed:
        pytest.skip(sandbox_unavailable())
    uid, gid = image_user()
    status = Path(f"/proc/{pod.server_pid}/status").read_text()
    assert re.search(rf"^Uid:\s+{uid}\s+{uid}\s+{uid}\s+{uid}$", status, re.M), status
    assert re.search(rf"^Gid:\s+{gid}\s+{gid}\s+{gid}\s+{gid}$", status, re.M), status
    assert re.search(r"^CapEff:\s+0+$", status, re.M) and re.search(r"^CapBnd:\s+0+$", status, re.M)
    mountinfo = [line.split() for line in Path(f"/proc/{pod.server_pid}/mountinfo").read_text().splitlines()]
    options = {fields[4]: fields[5].split(",") for fields in mountinfo}
    assert "ro" in options["/"], options["/"]
    data = pod.host(setting("--data-dir", "SHARDLINE_DATA_DIR"))
    assert "rw" in options[data], options.get(data)


def test_writes_go_to_the_data_volume_only(pod: Pod):
    user, password = probe_login(pod)
    done = redis_cli(pod, user, password, "SET", "deploy-test-key", "value")
    assert done.stdout.strip() == "OK", done.stdout + done.stderr
    data = Path(pod.host(setting("--data-dir", "SHARDLINE_DATA_DIR")))
    deadline = time.monotonic() + 10
    while not any(f.stat().st_size > 0 for f in (data / "appendonlydir").glob("*.aof")):
        assert time.monotonic() < deadline, f"nothing logged in {data}/appendonlydir"
        time.sleep(0.1)
    # The Secrets' files were used: nothing generated in the data directory.
    assert not {"cert.pem", "key.pem", "users"} & {p.name for p in data.iterdir()}


def test_users_made_by_the_readme_recipe_log_in(pod: Pod, secrets):
    """Each user of the recipe's users file logs in with its <name>-password file."""
    users_name, users_key = secret_file(setting("--users", "SHARDLINE_USERS"))
    users_file = secrets[users_name][users_key]
    names = [line.split(":", 1)[0] for line in users_file.read_text().splitlines()
             if line and not line.startswith("#")]
    assert "probe" in names and len(names) >= 2, names
    for name in names:
        password = users_file.parent / f"{name}-password"
        assert password.is_file(), f"the recipe leaves no {password.name}"
        done = redis_cli(pod, name, password, "PING")
        assert done.stdout.strip() == "PONG", f"{name}: {done.stdout}{done.stderr}"


def test_metrics_answer_where_the_podmonitor_scrapes(pod: Pod):
    path = one("PodMonitor")["spec"]["podMetricsEndpoints"][0].get("path", "/metrics")
    with urllib.request.urlopen(f"http://127.0.0.1:{pod.metrics_port}{path}", timeout=10) as resp:
        assert resp.status == 200
        body = resp.read().decode()
    assert "shardline_" in body


def test_users_reload_after_a_secret_update(pod: Pod, scratch: Path):
    """The README's procedure: the kubelet swaps the Secret's files, `kill -HUP 1` reloads."""
    users_path = setting("--users", "SHARDLINE_USERS")
    mount = mount_of(users_path)["mountPath"]
    folder = pod.mounts[mount]
    current = folder / "..data"
    new_users = scratch / "reload-users"
    shutil.copyfile(current / Path(users_path).name, new_users)
    password = scratch / "reloaded-password"
    password.write_text("a-new-users-password")
    added = subprocess.run([str(require_binary()), "passwd", "reloaded", "--users", str(new_users)],
                           input=password.read_text(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert added.returncode == 0, added.stderr
    before = redis_cli(pod, "reloaded", password, "PING")
    assert before.stdout.strip() != "PONG"
    files = {p.name: p for p in current.iterdir()}
    files[Path(users_path).name] = new_users
    gid = pod_spec()["securityContext"]["fsGroup"]
    mode = volume(mount_of(users_path)["name"])["secret"].get("defaultMode", 0o644)
    stamp = write_secret_version(folder, files, mode, gid)
    os.symlink(stamp, folder / "..data_tmp")
    os.replace(folder / "..data_tmp", folder / "..data")
    count = len([line for line in new_users.read_text().splitlines() if line and not line.startswith("#")])
    os.kill(pod.init_pid, signal.SIGHUP)  # `kill -HUP 1` in the container
    deadline = time.monotonic() + 10
    while f"({count} users)" not in pod.log():
        assert time.monotonic() < deadline, f"no reload logged:\n{pod.log()[-2000:]}"
        time.sleep(0.05)
    after = redis_cli(pod, "reloaded", password, "PING")
    assert after.stdout.strip() == "PONG", after.stdout + after.stderr
    assert pod.probe("readinessProbe").returncode == 0


def test_sigterm_stops_within_the_grace_period(scratch: Path, secrets):
    stopping = start_pod(scratch, "stopping", secrets)
    grace = pod_spec()["terminationGracePeriodSeconds"]
    code, took = stopping.stop(grace)
    assert code == 0, f"exit code {code} after {took:.1f} s:\n{stopping.log()[-2000:]}"
    assert took < duration_s(setting("--shutdown-timeout", "SHARDLINE_SHUTDOWN_TIMEOUT") or "5s")
    assert "shardline stopped" in stopping.log()
