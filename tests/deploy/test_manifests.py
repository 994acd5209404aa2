"""Deploy manifests parse and agree with the code: ports, services, env vars, flags, config keys."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import click
import pytest
from pydantic import BaseModel

from ragsieve.collector.settings import CollectorSettings
from ragsieve.jobs.cli import COMMANDS
from ragsieve.jobs.settings import Settings, load_settings

yaml = pytest.importorskip("yaml")

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ROOT_ENV = {"RAGSIEVE_CONFIG"}  # the root CLI's --config option, not a Settings field
PORT = CollectorSettings.model_fields["port"].default


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def k8s_objects() -> list[dict[str, Any]]:
    return [d for p in sorted((DEPLOY / "k8s").glob("*.yaml")) for d in docs(p)]


def compose() -> dict[str, Any]:
    return docs(DEPLOY / "compose.yaml")[0]


def setting_exists(env_name: str) -> bool:
    """RAGSIEVE_A__B names a real field path of Settings (nested models walked by ``__``)."""
    if env_name in ROOT_ENV:
        return True
    parts = env_name.removeprefix("RAGSIEVE_").lower().split("__")
    model: type[BaseModel] = Settings
    for i, part in enumerate(parts):
        field = model.model_fields.get(part)
        if field is None:
            return False
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
        elif i != len(parts) - 1:
            return False
    return isinstance(model, type) and parts[-1] in model.model_fields


def command(args: list[str]) -> click.Command:
    """Resolve ``["workers", "worker", ...]`` to the click command it runs."""
    import importlib

    name = args[0]
    target = COMMANDS.get(name) or {"workers": "ragsieve.jobs.workers.cli:workers"}.get(name)
    assert target, f"{name!r} is not a ragsieve command"
    module, _, attr = target.partition(":")
    cmd: click.Command = getattr(importlib.import_module(module), attr)
    rest = args[1:]
    while isinstance(cmd, click.Group) and rest and not rest[0].startswith("-"):
        sub = cmd.commands.get(rest[0])
        assert sub is not None, f"{args}: no subcommand {rest[0]!r}"
        cmd, rest = sub, rest[1:]
    flags = {o for p in cmd.params for o in p.opts}
    for token in rest:
        if token.startswith("--"):
            assert token.split("=")[0] in flags, f"{args}: unknown flag {token}"
    return cmd


def containers() -> Iterator[tuple[str, dict[str, Any]]]:
    for obj in k8s_objects():
        if obj["kind"] == "Deployment":
            for c in obj["spec"]["template"]["spec"]["containers"]:
                yield obj["metadata"]["name"], c


# -- everything parses ------------------------------------------------------------------------
def test_every_manifest_parses() -> None:
    files = [*DEPLOY.rglob("*.yaml")]
    assert len(files) >= 9
    for path in files:
        assert docs(path), path
    kinds = {o["kind"] for o in k8s_objects()}
    assert {
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "ConfigMap",
        "PodDisruptionBudget",
    } <= kinds


def test_example_config_and_configmap_load_into_settings(tmp_path: Path) -> None:
    s = load_settings(DEPLOY / "config.example.toml")
    assert s.collector.port == PORT
    [cm] = [o for o in k8s_objects() if o["kind"] == "ConfigMap"]
    (tmp_path / "r.toml").write_text(cm["data"]["ragsieve.toml"])
    assert load_settings(tmp_path / "r.toml").jobs.backend == "offline"


# -- env vars and commands --------------------------------------------------------------------
def test_env_vars_are_settings_fields() -> None:
    names: set[str] = set()
    for _, c in containers():
        names |= {e["name"] for e in c.get("env", [])}
    for svc in compose()["services"].values():
        names |= set((svc.get("environment") or {}).keys())
    names |= set(compose()["x-ragsieve-env"].keys())
    for unit in (DEPLOY / "systemd").glob("*.service"):
        names |= set(re.findall(r"^Environment=(\w+)=", unit.read_text(), re.M))
    ours = {n for n in names if n.startswith("RAGSIEVE_")}
    assert {"RAGSIEVE_STORE", "RAGSIEVE_COLLECTOR__HOST", "RAGSIEVE_LLM__API_KEY"} <= ours
    assert [n for n in sorted(ours) if not setting_exists(n)] == []
    assert not setting_exists("RAGSIEVE_COLLECTOR__NOPE")  # the check itself can fail


def test_commands_and_flags_exist() -> None:
    seen = []
    for _, c in containers():
        if c["image"].startswith("ragsieve"):
            seen.append(command(c["args"]).name)
    for svc in compose()["services"].values():
        if svc.get("image", "").startswith("ragsieve"):
            seen.append(command(svc["command"]).name)
    for unit in (DEPLOY / "systemd").glob("*.service"):
        [line] = re.findall(r"^ExecStart=\S+/ragsieve (.+)$", unit.read_text(), re.M)
        seen.append(command(line.split()).name)
    assert {"serve", "worker", "schedule"} <= set(seen)


SECRET_ENV = {
    "ragsieve-collector": {"RAGSIEVE_STORE"},
    "ragsieve-worker": {"RAGSIEVE_STORE", "RAGSIEVE_LLM__API_KEY"},
    "ragsieve-scheduler": {"RAGSIEVE_STORE"},
}
SECRET_NAME = re.compile(r"pass|secret|key|token", re.I)


def test_secrets_come_from_secret_refs_only() -> None:
    env_of = {name: {e["name"]: e for e in c.get("env", [])} for name, c in containers()}
    for name, expected in SECRET_ENV.items():
        assert expected <= set(env_of[name]), name
        for var in expected:
            ref = env_of[name][var]["valueFrom"]["secretKeyRef"]
            assert ref["name"] == "ragsieve-secrets" and ref["key"], (name, var)
            assert "value" not in env_of[name][var], (name, var)
    for name, env in env_of.items():
        for var, e in env.items():
            names_a_variable = var.endswith("_ENV")  # e.g. TOKEN_ENV holds a name, not a secret
            if (SECRET_NAME.search(var) and not names_a_variable) or var in {"RAGSIEVE_STORE"}:
                assert "value" not in e and "secretKeyRef" in e.get("valueFrom", {}), (name, var)
            assert "password" not in str(e.get("value", "")).lower(), (name, var)


# -- ports and service names ------------------------------------------------------------------
def test_k8s_services_select_deployments_and_ports_match() -> None:
    objs = k8s_objects()
    deployments = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Deployment"}
    for svc in (o for o in objs if o["kind"] == "Service"):
        sel = svc["spec"]["selector"]
        [dep] = [
            d
            for d in deployments.values()
            if sel.items() <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
        ports = {
            p["name"]: p["containerPort"]
            for c in dep["spec"]["template"]["spec"]["containers"]
            for p in c.get("ports", [])
        }
        for p in svc["spec"]["ports"]:
            assert ports[p["targetPort"]] == p["port"], (svc["metadata"]["name"], p)
    for obj in objs:
        if obj["kind"] == "HorizontalPodAutoscaler":
            assert obj["spec"]["scaleTargetRef"]["name"] in deployments
        if obj["kind"] == "PodDisruptionBudget":
            sel = obj["spec"]["selector"]["matchLabels"]
            assert any(
                sel.items() <= d["spec"]["template"]["metadata"]["labels"].items()
                for d in deployments.values()
            )
        if obj["kind"] == "Deployment":
            d_sel = obj["spec"]["selector"]["matchLabels"].items()
            assert d_sel <= obj["spec"]["template"]["metadata"]["labels"].items()
    collector = deployments["ragsieve-collector"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in collector["env"]}
    assert int(env["RAGSIEVE_COLLECTOR__PORT"]) == PORT
    assert collector["ports"][0]["containerPort"] == PORT


def test_k8s_collector_chain_points_at_real_services() -> None:
    objs = k8s_objects()
    services = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Service"}
    deployments = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Deployment"}

    def env_of(dep: str) -> dict[str, str]:
        c = deployments[dep]["spec"]["template"]["spec"]["containers"][0]
        return {e["name"]: e.get("value") for e in c["env"]}

    target = urlparse(env_of("otelcol-sampler")["RAG_COLLECTOR_ENDPOINT"])
    assert target.hostname.split(".")[0] in services
    assert target.port == services[target.hostname.split(".")[0]]["spec"]["ports"][0]["port"]
    headless = env_of("otelcol-lb")["OTELCOL_SAMPLER_HOST"].split(".")[0]
    assert services[headless]["spec"]["clusterIP"] == "None"
    mounted = {
        v["configMap"]["name"]
        for d in deployments.values()
        for v in d["spec"]["template"]["spec"].get("volumes", [])
        if "configMap" in v
    }
    generated = {g["name"] for g in docs(DEPLOY / "kustomization.yaml")[0]["configMapGenerator"]}
    shipped = {o["metadata"]["name"] for o in objs if o["kind"] == "ConfigMap"}
    assert mounted <= generated | shipped
    for res in docs(DEPLOY / "kustomization.yaml")[0]["resources"]:
        assert (DEPLOY / res).is_file(), res


def test_compose_wiring() -> None:
    c = compose()
    services = c["services"]
    raw = c["x-ragsieve-env"]["RAGSIEVE_STORE"]
    store = urlparse(raw.replace("${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}", "pw"))
    assert store.scheme == "postgresql" and store.hostname in services and store.port == 5432
    rc_env = services["ragsieve-collector"]["environment"]
    assert urlparse(rc_env["RAGSIEVE_COLLECTOR__FORWARD_OTLP"]).hostname in services
    sampler_target = urlparse(services["otelcol-sampler"]["environment"]["RAG_COLLECTOR_ENDPOINT"])
    assert sampler_target.hostname == "ragsieve-collector"
    assert sampler_target.port == int(rc_env["RAGSIEVE_COLLECTOR__PORT"]) == PORT
    assert services["ragsieve-collector"]["deploy"]["replicas"] == 2
    assert services["otelcol-lb"]["environment"]["OTELCOL_SAMPLER_HOST"] in services
    for name, svc in services.items():
        for vol in svc.get("volumes", []):
            src = vol.split(":")[0]
            if src.startswith("./"):
                assert (DEPLOY / src).is_file(), (name, src)
    needed = {"postgres", "phoenix", "otelcol-lb", "otelcol-sampler", "ragsieve-worker"}
    assert needed <= set(services)


# -- the OpenTelemetry Collector configs (SPAN_SPEC §5) ---------------------------------------
def _pipelines_are_wired(cfg: dict[str, Any]) -> None:
    for name, p in cfg["service"]["pipelines"].items():
        for kind in ("receivers", "processors", "exporters"):
            for item in p.get(kind, []):
                assert item in cfg[kind], f"{name}: {kind} {item} is not defined"
        assert p["processors"][0] == "memory_limiter", name
        if "batch" in p["processors"]:
            assert p["processors"][-1] == "batch", name
    for ext in cfg["service"].get("extensions", []):
        assert ext in cfg["extensions"]


def test_otelcol_tiers() -> None:
    lb = docs(DEPLOY / "otelcol" / "lb.yaml")[0]
    sampler = docs(DEPLOY / "otelcol" / "sampler.yaml")[0]
    _pipelines_are_wired(lb)
    _pipelines_are_wired(sampler)
    lbx = lb["exporters"]["loadbalancing"]
    assert lbx["routing_key"] == "traceID"
    assert lbx["resolver"]["dns"]["port"] == 4317
    assert sampler["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"].endswith(":4317")
    tail = sampler["processors"]["tail_sampling"]
    types = {p["name"]: p for p in tail["policies"]}
    assert types["keep-errors"]["status_code"]["status_codes"] == ["ERROR"]
    assert types["keep-slow"]["type"] == "latency"
    assert "score" in " ".join(types["keep-low-retrieval-scores"]["ottl_condition"]["span"])
    assert "thumbs_down" in str(types["keep-negative-feedback"]["ottl_condition"])
    pct = types["baseline"]["probabilistic"]["sampling_percentage"]
    policy = sampler["processors"]["resource/sampling-policy"]["attributes"]
    stamped = {a["key"]: a["value"] for a in policy}
    assert stamped["rag.sampling.baseline_percentage"] == pct  # the weight cannot drift
    traces = sampler["service"]["pipelines"]["traces"]["processors"]
    assert traces.index("tail_sampling") < traces.index("resource/sampling-policy")
    exporter = sampler["exporters"]["otlp_http/rag_collector"]
    assert exporter["traces_endpoint"].endswith("/v1/traces")
    assert exporter["logs_endpoint"].endswith("/v1/logs")


# -- image and units --------------------------------------------------------------------------
def test_dockerfile_is_slim_non_root_with_healthcheck() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\s*$", text, re.M)
    [user] = re.findall(r"^USER (\S+)", text, re.M)
    assert not user.startswith(("root", "0"))
    assert "HEALTHCHECK" in text and f"127.0.0.1:{PORT}/healthz" in text
    grpc = CollectorSettings.model_fields["grpc_port"].default
    assert re.search(rf"^EXPOSE {PORT} {grpc}$", text, re.M)
    assert f"RAGSIEVE_COLLECTOR__GRPC_PORT={grpc}" in text


def test_systemd_units_run_unprivileged() -> None:
    units = list((DEPLOY / "systemd").glob("*.service"))
    assert units
    for unit in units:
        text = unit.read_text()
        assert re.search(r"^User=(?!root)\w+", text, re.M), unit
        assert "[Install]" in text and "ExecStart=" in text


# -- the collector is never open to the network without a token ------------------------------
TOKEN_ENV = "RAGSIEVE_COLLECTOR__TOKEN_ENV"


def dockerfile_env() -> dict[str, str]:
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    return dict(re.findall(r"(\w+)=(\S+)", " ".join(re.findall(r"^ENV (.+)$", text, re.M))))


def test_every_deployed_collector_requires_a_token_from_a_secret() -> None:
    image = dockerfile_env()
    assert image["RAGSIEVE_COLLECTOR__HOST"] == "0.0.0.0"
    token_var = image[TOKEN_ENV]
    assert not token_var.startswith("RAGSIEVE_") and token_var not in image  # never baked in

    k8s = {name: {e["name"]: e for e in c.get("env", [])} for name, c in containers()}
    collector = k8s["ragsieve-collector"]
    assert collector[TOKEN_ENV]["value"] == token_var
    ref = collector[token_var]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "ragsieve-secrets", "key": "collector-token"}  # not optional

    services = compose()["services"]
    env = services["ragsieve-collector"]["environment"]
    assert env[TOKEN_ENV] == token_var
    assert env[token_var] == f"${{{token_var}:?set {token_var}}}"  # compose refuses to start

    # Whatever listens beyond loopback requires the token.
    for name, c_env in k8s.items():
        if c_env.get("RAGSIEVE_COLLECTOR__HOST", {}).get("value") == "0.0.0.0":
            assert TOKEN_ENV in c_env, name
    for name, svc in services.items():
        if (svc.get("environment") or {}).get("RAGSIEVE_COLLECTOR__HOST") == "0.0.0.0":
            assert TOKEN_ENV in svc["environment"], name


def test_the_samplers_send_the_token_the_collectors_require() -> None:
    token_var = dockerfile_env()[TOKEN_ENV]
    sampler = docs(DEPLOY / "otelcol" / "sampler.yaml")[0]
    headers = sampler["exporters"]["otlp_http/rag_collector"]["headers"]
    assert headers == {"Authorization": f"Bearer ${{env:{token_var}}}"}
    k8s = {name: {e["name"]: e for e in c.get("env", [])} for name, c in containers()}
    ref = k8s["otelcol-sampler"][token_var]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "ragsieve-secrets", "key": "collector-token"}
    sampler_env = compose()["services"]["otelcol-sampler"]["environment"]
    assert (
        sampler_env[token_var]
        == compose()["services"]["ragsieve-collector"]["environment"][token_var]
    )


def test_the_grpc_gateway_sends_otlp_grpc_with_the_token_to_the_collectors_grpc_port() -> None:
    """deploy/otelcol/gateway-grpc.yaml: the `otlp` (gRPC) exporter to ragsieve on 4317."""
    token_var = dockerfile_env()[TOKEN_ENV]
    grpc = CollectorSettings.model_fields["grpc_port"].default
    gateway = docs(DEPLOY / "otelcol" / "gateway-grpc.yaml")[0]
    _pipelines_are_wired(gateway)
    exporters = {e for p in gateway["service"]["pipelines"].values() for e in p["exporters"]}
    assert exporters == {"otlp_grpc/rag_collector"}  # `otlp` before Collector 0.144
    assert set(gateway["service"]["pipelines"]) == {"traces", "logs"}
    exporter = gateway["exporters"]["otlp_grpc/rag_collector"]
    host, _, port = exporter["endpoint"].rpartition(":")
    assert host == "${env:RAG_COLLECTOR_HOST}" and int(port) == grpc
    assert "://" not in exporter["endpoint"] and exporter["tls"] == {"insecure": True}
    assert exporter["compression"] == "gzip"
    # gRPC metadata keys are lower case; the receiver reads `authorization`.
    assert exporter["headers"] == {"authorization": f"Bearer ${{env:{token_var}}}"}
    assert exporter["retry_on_failure"]["enabled"] is True
    # The port it dials is the one the collectors serve gRPC on, in k8s and in compose.
    objs = k8s_objects()
    [svc] = [
        o for o in objs if o["kind"] == "Service" and o["metadata"]["name"] == "ragsieve-collector"
    ]
    assert grpc in {p["port"] for p in svc["spec"]["ports"]}
    k8s_env = {
        name: {e["name"]: e.get("value") for e in c.get("env", [])} for name, c in containers()
    }
    assert int(k8s_env["ragsieve-collector"]["RAGSIEVE_COLLECTOR__GRPC_PORT"]) == grpc
    rc = compose()["services"]["ragsieve-collector"]
    assert int(rc["environment"]["RAGSIEVE_COLLECTOR__GRPC_PORT"]) == grpc
    assert str(grpc) in rc["expose"]


def test_compose_publishes_ports_on_loopback_only() -> None:
    for name, svc in compose()["services"].items():
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)


def test_the_image_settings_refuse_to_serve_without_the_token(
    monkeypatch: pytest.MonkeyPatch, store: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The image's environment, the real CLI: no token, no server; with it, 401 without it."""
    import threading
    import time

    import httpx
    import uvicorn
    from click.testing import CliRunner

    from ragsieve.jobs.cli import cli, main

    image = dockerfile_env()
    token_var = image[TOKEN_ENV]
    monkeypatch.setenv(TOKEN_ENV, token_var)
    monkeypatch.delenv(token_var, raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["collector", "serve", "--port", "0", "--store", store.url])
    assert exited.value.code == 2
    assert f"{token_var}: environment variable is not set" in capsys.readouterr().err

    # With the token set, the same command serves and refuses requests without it.
    servers: list[uvicorn.Server] = []
    real_run = uvicorn.Server.run

    def keep(server: uvicorn.Server, *args: Any, **kwargs: Any) -> None:
        servers.append(server)
        real_run(server, *args, **kwargs)

    monkeypatch.setattr(uvicorn.Server, "run", keep)
    monkeypatch.setenv(token_var, "s3cret")
    port = _free_port()
    args = ["collector", "serve", "--port", str(port), "--store", store.url]
    thread = threading.Thread(target=CliRunner().invoke, args=(cli, args), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while not (servers and servers[0].started):
            assert time.monotonic() < deadline, "collector serve did not start"
            time.sleep(0.05)
        body = {"resourceSpans": []}
        assert httpx.post(f"{url}/v1/traces", json=body).status_code == 401
        ok = {"authorization": "Bearer s3cret"}
        assert httpx.post(f"{url}/v1/traces", json=body, headers=ok).status_code == 200
        assert httpx.get(f"{url}/healthz").status_code == 200  # probes need no token
    finally:
        if servers:
            servers[0].should_exit = True
        thread.join(30)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
