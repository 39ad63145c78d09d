"""deploy/grafana/shardline.json: a well-formed Grafana dashboard whose PromQL parses, and
whose expressions -- and those of deploy/prometheus/alerts.yml -- name only metrics and
labels the real server exports (checked against a live scrape after driving traffic)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[1]
DASHBOARD = DEPLOY / "grafana" / "shardline.json"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"

# Labels Prometheus attaches to every scraped series, and series it makes itself.
TARGET_LABELS = {"job", "instance"}
SYNTHETIC_SERIES = {"up": set(TARGET_LABELS)}

# ---------------------------------------------------------------------------------------
# PromQL reference extraction
# ---------------------------------------------------------------------------------------

AGGREGATIONS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile", "limitk", "limit_ratio",
}
FUNCTIONS = {
    "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
    "avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh",
    "count_over_time", "day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg",
    "delta", "deriv", "exp", "floor", "histogram_avg", "histogram_count",
    "histogram_fraction", "histogram_quantile", "histogram_stddev", "histogram_stdvar",
    "histogram_sum", "holt_winters", "hour", "idelta", "increase", "irate", "label_join",
    "label_replace", "last_over_time", "ln", "log10", "log2", "mad_over_time",
    "max_over_time", "min_over_time", "minute", "month", "pi", "predict_linear",
    "present_over_time", "quantile_over_time", "rad", "rate", "resets", "round", "scalar",
    "sgn", "sin", "sinh", "sort", "sort_desc", "sqrt", "stddev_over_time",
    "stdvar_over_time", "sum_over_time", "tan", "tanh", "time", "timestamp", "vector", "year",
}
KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "atan2", "inf", "nan",
}
GROUPING = ("by", "without", "on", "ignoring", "group_left", "group_right")

NUMBER_OR_IDENT = re.compile(
    r"(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
    r"|(?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)")
SELECTOR = re.compile(r"(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)?\s*\{(?P<matchers>[^{}]*)\}")
MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
GROUPING_CLAUSE = re.compile(r"\b(?P<kw>" + "|".join(GROUPING) + r")\s*\((?P<labels>[^()]*)\)")
LEGEND_LABEL = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
LABEL_VALUES = re.compile(r"^\s*label_values\((?P<expr>.*),\s*(?P<label>[A-Za-z_]\w*)\s*\)\s*$",
                          re.S)


@dataclass
class Refs:
    """What one PromQL expression refers to."""

    source: str
    expr: str
    metrics: set[str] = field(default_factory=set)
    # (metric, label) pairs used in a selector's matchers
    matcher_labels: set[tuple[str, str]] = field(default_factory=set)
    # (clause keyword, label, metrics in the clause's scope)
    grouping: list[tuple[str, str, frozenset[str]]] = field(default_factory=list)
    # labels a legend or variable reads from the result
    output_labels: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)


def normalize(expr: str) -> str:
    """Drops what names no metric or label: string literals, range and subquery brackets,
    offsets, Grafana variables."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    expr = re.sub(r"\[[^\]]*\]", " ", expr)
    expr = re.sub(r"\boffset\s+-?[0-9A-Za-z_$]+", " ", expr)
    expr = re.sub(r"\$\{[^}]*\}|\$\w+", " ", expr)
    return expr


def _balanced(text: str, open_at: int) -> int:
    """Index just past the parenthesis group opening at text[open_at]."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced parentheses in {text!r}")


def _balanced_back(text: str, close_at: int) -> int:
    """Index of the parenthesis opening the group that closes at text[close_at]."""
    depth = 0
    for i in range(close_at, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unbalanced parentheses in {text!r}")


def _names(text: str, errors: list[str]) -> set[str]:
    """Metric names in normalized text: identifiers that are no function, keyword or label."""
    text = SELECTOR.sub(lambda m: f" {m.group('name') or ''} ", text)
    text = GROUPING_CLAUSE.sub(" ", text)
    names = set()
    for m in NUMBER_OR_IDENT.finditer(text):
        ident = m.group("ident")
        if ident is None or ident.lower() in KEYWORDS:
            continue
        if text[m.end():].lstrip().startswith("("):
            if ident not in FUNCTIONS and ident not in AGGREGATIONS:
                errors.append(f"unknown PromQL function {ident!r}")
            continue
        names.add(ident)
    return names


def extract(expr: str, source: str) -> Refs:
    refs = Refs(source=source, expr=expr)
    text = normalize(expr)
    for m in SELECTOR.finditer(text):
        name = m.group("name")
        labels = MATCHER.findall(m.group("matchers"))
        if not name:
            refs.errors.append("a selector without a metric name")
            continue
        refs.matcher_labels.update((name, label) for label in labels)
    refs.metrics = _names(text, refs.errors)
    for m in GROUPING_CLAUSE.finditer(text):
        kw = m.group("kw")
        labels = [l.strip() for l in m.group("labels").split(",") if l.strip()]
        if kw in ("by", "without"):
            after = m.end() + len(text[m.end():]) - len(text[m.end():].lstrip())
            if after < len(text) and text[after] == "(":  # sum by (l) (scope)
                scope = text[after:_balanced(text, after)]
            else:  # sum (scope) by (l)
                before = len(text[:m.start()].rstrip()) - 1
                assert text[before] == ")", f"cannot find the scope of {m.group(0)!r}"
                scope = text[_balanced_back(text, before):before + 1]
            scope_metrics = frozenset(_names(scope, refs.errors))
        else:
            scope_metrics = frozenset(refs.metrics)
        refs.grouping.extend((kw, label, scope_metrics) for label in labels)
    return refs


# ---------------------------------------------------------------------------------------
# Sources: the dashboard and the alerting rules
# ---------------------------------------------------------------------------------------

def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def all_panels(panels: list[dict]) -> list[dict]:
    out = []
    for p in panels:
        out.append(p)
        out.extend(all_panels(p.get("panels", [])))  # collapsed rows hold their panels
    return out


def dashboard_refs() -> list[Refs]:
    d = dashboard()
    refs = []
    for p in all_panels(d["panels"]):
        for t in p.get("targets", []):
            r = extract(t["expr"], f"panel {p['title']!r} {t['refId']}")
            r.output_labels = set(LEGEND_LABEL.findall(t.get("legendFormat", "")))
            refs.append(r)
    for v in d["templating"]["list"]:
        if v["type"] != "query":
            continue
        query = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = LABEL_VALUES.match(query)
        assert m, f"variable {v['name']}: only label_values(selector, label) is checked"
        r = extract(m.group("expr"), f"variable {v['name']}")
        r.output_labels = {m.group("label")}
        refs.append(r)
    return refs


def alert_refs() -> list[Refs]:
    doc = yaml.safe_load(ALERTS.read_text())
    return [extract(r["expr"], f"alert {r.get('alert') or r.get('record')}")
            for g in doc["groups"] for r in g["rules"]]


# ---------------------------------------------------------------------------------------
# The scrape
# ---------------------------------------------------------------------------------------

SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+\S+")
LABEL_PAIR = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="(?:[^"\\]|\\.)*"')


def parse_scrape(text: str) -> dict[str, set[str]]:
    """Sample name (histograms: _bucket, _sum, _count) -> label names seen on it, with the
    target labels Prometheus adds."""
    series: dict[str, set[str]] = {k: set(v) for k, v in SYNTHETIC_SERIES.items()}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"unparsable sample line {line!r}"
        labels = series.setdefault(m.group("name"), set(TARGET_LABELS))
        labels.update(LABEL_PAIR.findall(m.group("labels") or ""))
    return series


def problems(refs: list[Refs], series: dict[str, set[str]]) -> list[str]:
    """Every reference to a metric or label the scrape does not have."""
    out = []
    for r in refs:
        where = f"{r.source}: {' '.join(r.expr.split())}"
        out.extend(f"{where}: {e}" for e in r.errors)
        for name in sorted(r.metrics - series.keys()):
            out.append(f"{where}: metric {name} is not exported")
        for name, label in sorted(r.matcher_labels):
            if name in series and label not in series[name]:
                out.append(f"{where}: {name} has no label {label!r}")
        for kw, label, scope in r.grouping:
            known = [series[n] for n in scope if n in series]
            if kw in ("by", "without"):
                lacking = sorted(n for n in scope if n in series and label not in series[n])
                if lacking:
                    out.append(f"{where}: {kw} ({label}): no such label on {lacking}")
            elif known and not any(label in s for s in known):
                out.append(f"{where}: {kw} ({label}): no such label on {sorted(scope)}")
        everywhere = set().union(*(series.get(n, set()) for n in r.metrics)) if r.metrics else set()
        for label in sorted(r.output_labels - everywhere):
            out.append(f"{where}: legend or variable reads label {label!r} that no "
                       f"referenced metric has")
    return out


# ---------------------------------------------------------------------------------------
# Tests without a server
# ---------------------------------------------------------------------------------------

def test_extract_names_metrics_and_labels():
    r = extract('sum by (instance, shard) (rate(shardline_reactor_stalls_count{job=~"$job",'
                'shard=~"$shard"}[$__rate_interval])) - sum by (instance, shard) (rate('
                'shardline_reactor_stalls_preempted_total{instance=~"${instance}"}[5m] offset 1h))'
                ' > 1e-3 and on (job) up == 1', "t")
    assert r.errors == []
    assert r.metrics == {"shardline_reactor_stalls_count",
                         "shardline_reactor_stalls_preempted_total", "up"}
    assert r.matcher_labels == {("shardline_reactor_stalls_count", "job"),
                                ("shardline_reactor_stalls_count", "shard"),
                                ("shardline_reactor_stalls_preempted_total", "instance")}
    by = {(kw, label, scope) for kw, label, scope in r.grouping if kw == "by"}
    assert ("by", "shard", frozenset({"shardline_reactor_stalls_count"})) in by
    assert ("by", "shard", frozenset({"shardline_reactor_stalls_preempted_total"})) in by

    r = extract('histogram_quantile(0.99, sum(rate(x_bucket[5m])) by (le)) / count without '
                '(group) (y{a="b",c!~"d"})', "t")
    assert r.metrics == {"x_bucket", "y"}
    assert ("by", "le", frozenset({"x_bucket"})) in r.grouping
    assert ("without", "group", frozenset({"y"})) in r.grouping
    assert extract("no_such_function(x)", "t").errors


def test_checker_reports_unknown_metrics_and_labels():
    series = parse_scrape('# TYPE a_total counter\na_total{shard="0",reason="x"} 1\n'
                          'h_bucket{shard="0",le="+Inf"} 1\nh_count{shard="0"} 1\n')
    good = [extract('sum by (instance, reason) (rate(a_total{shard="0"}[5m]))', "good"),
            extract("histogram_quantile(0.9, sum by (le) (rate(h_bucket[5m])))", "good"),
            extract('up{job="shardline"} == 0', "good")]
    assert problems(good, series) == []
    bad = {
        "rate(a_totl[5m])": "a_totl is not exported",
        'a_total{resul="x"}': "no label 'resul'",
        "sum by (result) (a_total)": "by (result)",
        "sum by (le) (h_count)": "by (le)",
    }
    for expr, expected in bad.items():
        found = problems([extract(expr, "bad")], series)
        assert any(expected in p for p in found), (expr, found)
    legend = extract("sum by (shard) (a_total)", "bad")
    legend.output_labels = {"command"}
    assert problems([legend], series)


def test_dashboard_is_importable():
    d = dashboard()
    assert d["title"] and d["uid"] and isinstance(d["schemaVersion"], int)
    assert d.get("id") is None  # importable into any Grafana
    variables = {v["name"]: v for v in d["templating"]["list"]}
    ds = variables["datasource"]
    assert ds["type"] == "datasource" and ds["query"] == "prometheus"
    for name in ("job", "instance", "shard"):
        assert variables[name]["type"] == "query"
        assert variables[name]["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    ids = [p["id"] for p in all_panels(d["panels"])]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    for p in all_panels(d["panels"]):
        pos = p["gridPos"]
        assert 0 <= pos["x"] and pos["x"] + pos["w"] <= 24 and pos["h"] > 0, p["title"]
        if p["type"] == "row":
            continue
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"], p["title"]
        for t in p["targets"]:
            assert t["expr"].strip() and t["refId"], p["title"]
            assert t["datasource"] == p["datasource"], p["title"]


def test_dashboard_selectors_follow_the_variables():
    """Every shardline selector is filtered by $job and $instance, per-shard ones by $shard."""
    for r in dashboard_refs():
        if r.source.startswith("variable"):
            continue
        for m in SELECTOR.finditer(r.expr):
            name, matchers = m.group("name"), m.group("matchers")
            if name == "up" or not name.startswith(("shardline_", "process_")):
                continue
            assert 'job=~"$job"' in matchers and 'instance=~"$instance"' in matchers, r.source
            if name.startswith("shardline_"):
                assert 'shard=~"$shard"' in matchers, r.source


def test_dashboard_covers_the_issue():
    metrics = set().union(*(r.metrics for r in dashboard_refs()))
    required = {
        "shardline_reactor_stalls_count", "shardline_reactor_stalls_preempted_total",
        "shardline_scheduler_time_spent_on_task_quota_violations_seconds_total",
        "shardline_connections_accepted_total", "shardline_connections_active",
        "shardline_password_hash_duration_seconds_bucket", "shardline_login_wait_seconds_bucket",
        "shardline_tls_handshakes_failed_total", "shardline_commands_total",
        "process_resident_memory_bytes", "shardline_aof_fsync_duration_seconds_bucket",
        "shardline_aof_written_bytes_total", "shardline_aof_records_total",
        "shardline_aof_rewrite_duration_seconds_count", "shardline_aof_write_errors_total",
        "shardline_reactor_utilization_ratio",
    }
    assert required - metrics == set()
    failures = [r for r in dashboard_refs() if "shardline_tls_handshakes_failed_total" in r.metrics]
    assert any(("by", "reason") == g[:2] for r in failures for g in r.grouping)


PROMTOOL = shutil.which("promtool")


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package 'prometheus')")
def test_dashboard_promql_parses():
    """Each expression (Grafana variables replaced) as a recording rule for promtool."""
    rules = []
    for i, r in enumerate(dashboard_refs()):
        expr = re.sub(r"\[\$__\w+\]", "[1m]", r.expr)
        expr = re.sub(r"\$\{?\w+\}?", ".*", expr)
        rules.append({"record": f"dashboard:expr_{i}", "expr": expr})
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
        f.flush()
        proc = subprocess.run([PROMTOOL, "check", "rules", f.name], capture_output=True,
                              text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---------------------------------------------------------------------------------------
# Against the real server
# ---------------------------------------------------------------------------------------

def drive_traffic(server) -> None:
    """Makes the series that appear only after an event: a command and its
    commands_total{command}, an error reply, a password hash, a reactor stall (DEBUG SLEEP
    10 ms, the quota-violation family), a wrong password, a plaintext client."""
    import redis  # redis-py
    kwargs = dict(host=server.host, port=server.port, ssl=True, ssl_ca_certs=str(server.cert),
                  username=server.user, socket_timeout=10)
    client = redis.Redis(password=server.password, **kwargs)
    try:
        assert client.set("deploy-test", "v")
        assert client.get("deploy-test") == b"v"
        client.execute_command("DEBUG", "SLEEP", "0.01")
        with pytest.raises(redis.ResponseError):
            client.execute_command("NO-SUCH-COMMAND")
    finally:
        client.close()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(password="wrong password", **kwargs).ping()
    with socket.create_connection((server.host, server.port), timeout=5) as s:
        s.sendall(b"PING\r\n")
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass


def live_series(server) -> dict[str, set[str]]:
    """The scrape once every referenced family is there (the task_queue_* families come
    with the first once-a-second statistics), or after 10 s."""
    drive_traffic(server)
    wanted = set().union(*(r.metrics for r in dashboard_refs() + alert_refs()))
    deadline = time.monotonic() + 10
    while True:
        series = parse_scrape(server.scrape())
        if wanted <= series.keys() or time.monotonic() > deadline:
            return series
        time.sleep(0.5)


@pytest.fixture(scope="module")
def series(shardline_server):
    return live_series(shardline_server)


def test_dashboard_and_alerts_name_exported_series(series):
    dash, alerts = dashboard_refs(), alert_refs()
    names = set().union(*(r.metrics for r in dash + alerts))
    assert len(names) >= 30, names
    assert "up" in names and "shardline_reactor_stalls_count" in names
    found = problems(dash + alerts, series)
    assert found == [], "\n".join(found)


def test_live_check_can_fail(series):
    bad = [extract('rate(shardline_reactor_stalls_totl{shard=~"$shard"}[5m])', "bad"),
           extract('sum by (instance, reason) (rate(shardline_logins_total[5m]))', "bad"),
           extract('shardline_tls_handshakes_failed_total{result="io"}', "bad")]
    found = problems(bad, series)
    assert len(found) == 3, found
