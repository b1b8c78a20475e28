"""The local data.gouv.fr twin: catalog snapshot store, search ranking and the HTTP APIs.

Nothing here imports Dagster. ``catalog.CatalogStore`` loads a snapshot from ``snapshots/``;
``app.create_app`` serves it over the main API (v1/v2), Tabular, Metrics and crawler routes;
``server.TwinServer`` runs that app on 127.0.0.1 and ``urls.TwinUrls`` tells clients where.
"""
