"""The HTTP API: the FastAPI app (`app.create_app`), its dependencies declared once (`deps`),
JSON errors (`errors`), the v1 routes by resource (`routes/`) and the audit's HTML page
(`audit_html`). Routes are thin adapters over the MemoryService facade."""
