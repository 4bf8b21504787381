"""The deployment files the operators' pages describe: every long-running process restarts."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_every_compose_service_has_a_restart_policy():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert set(services) == {"db", "redis", "web", "worker", "beat"}
    policies = {name: service.get("restart") for name, service in services.items()}
    assert policies == dict.fromkeys(services, "unless-stopped")


def test_the_web_port_is_published_on_the_loopback_only():
    # The site trusts X-Forwarded-Proto (behind a proxy): only the proxy may reach it.
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert services["web"]["environment"]["DJANGO_BEHIND_PROXY"] == "true"
    for name, service in services.items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)
