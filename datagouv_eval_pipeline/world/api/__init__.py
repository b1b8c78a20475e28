"""The twin's HTTP APIs: main API (v1/v2), Tabular, Metrics and crawler routes, and MCP.

``app.create_app`` serves a catalogue; ``server.TwinServer`` runs it on 127.0.0.1;
``front.twin_front`` puts it behind the hostname front under production host names.
"""
