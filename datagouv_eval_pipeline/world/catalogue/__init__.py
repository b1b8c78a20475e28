"""The twin's catalogue: the snapshot store, search ranking, Tabular tables, URL scheme.

``catalog.CatalogStore`` loads a snapshot from ``snapshots/``; ``urls.TwinUrls`` tells
clients where the twin answers. Nothing here serves HTTP.
"""
