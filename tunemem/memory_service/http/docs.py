"""`/docs` and `/redoc` served with no network: Swagger UI's and ReDoc's scripts and styles
come from the `fastapi-offline` package's static files (installed with tunemem, MIT), mounted
under `/static/docs`, instead of FastAPI's default CDN links. FastAPI documents this
self-hosting: turn the default pages off, mount the files, and build the pages with
`get_swagger_ui_html` / `get_redoc_html` pointing at them."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

STATIC_URL = "/static/docs"


def docs_assets() -> Path:
    """The folder holding swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js."""
    return Path(str(resources.files("fastapi_offline") / "static"))


def install_offline_docs(app: FastAPI) -> None:
    """Add `/docs`, `/redoc` and their assets to an app built with docs_url=redoc_url=None."""
    app.mount(STATIC_URL, StaticFiles(directory=docs_assets()), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"
    redirect_url = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} API",
            oauth2_redirect_url=f"{root}{redirect_url}",
            swagger_js_url=f"{root}{STATIC_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{STATIC_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{STATIC_URL}/favicon.png",
        )

    @app.get(redirect_url, include_in_schema=False)
    def swagger_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} API",
            redoc_js_url=f"{root}{STATIC_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{STATIC_URL}/favicon.png",
            with_google_fonts=False,
        )
