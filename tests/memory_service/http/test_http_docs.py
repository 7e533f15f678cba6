"""`/docs` and `/redoc` work with no network: their scripts come from the installed package,
and a real browser that can reach nothing but the server renders the operations."""

from __future__ import annotations

import re

import pytest

from tunemem.memory_service.http.app import create_app


def test_docs_pages_load_only_local_assets(client):
    for page in ("/docs", "/redoc"):
        html = client.get(page).text
        urls = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert urls and all(url.startswith("/static/docs/") for url in urls), urls
        assert "cdn." not in html and "fonts.googleapis" not in html
        for url in urls:
            asset = client.get(url)
            assert asset.status_code == 200 and len(asset.content) > 1000, url


@pytest.mark.browser
def test_swagger_ui_renders_the_operations_offline(service, serve, browser):
    url = serve(create_app(service))
    dom = browser(f"{url}/docs")
    paths = set(re.findall(r'data-path="([^"]+)"', dom))
    assert {"/v1/retrieve", "/v1/outcomes", "/v1/lessons", "/v1/audit/transfer"} <= paths
    assert 'class="opblock-summary-method">POST' in dom


@pytest.mark.browser
def test_redoc_renders_the_operations_offline(service, serve, browser):
    url = serve(create_app(service))
    dom = browser(f"{url}/redoc")
    assert "/v1/retrieve" in dom and "/v1/outcomes" in dom
    assert "Report an attempt" in dom  # an operation's description, rendered by ReDoc
