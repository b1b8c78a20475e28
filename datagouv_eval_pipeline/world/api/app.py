"""The twin's ASGI application: main API v1/v2, Tabular, Metrics, crawler, files and pages.

One Starlette app serves every data.gouv.fr service under a path prefix (see ``urls.py``):

* ``/api/1/…`` and ``/api/2/…``: the udata endpoints the MCP server, the CLI and the
  ``datagouv-client`` library call (reference §2.1), with udata's pagination envelope and
  ``{"message": …}`` errors;
* ``/tabular/api/resources/{rid}/…``: api-tabular (meta, profile, data, data/csv, swagger);
* ``/metrics/api/{model}/data/``: the Metrics API (api-tabular in metrics mode);
* ``/crawler/api/resources-exceptions``: the crawler's large-file exceptions;
* ``/datasets/r/{rid}`` (and ``/api/1/datasets/r/{rid}``): 302 to the file, served under
  ``/_ext/{host}/{path}`` along with the dataservices' OpenAPI specs;
* ``/datasets/{slug}/``, ``/dataservices/{id}/``, ``/organizations/{slug}/``: minimal HTML pages.
* ``/mcp/v{version}/mcp``: the MCP server at each pinned release (``twin/mcp/``).

Absolute URLs in responses are built from the request's own base URL, so the same app works
behind any port or host name.
"""

from __future__ import annotations

import html
import io
import json
import zipfile
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp

from datagouv_eval_pipeline.base.production import SERVICE_HOSTS
from datagouv_eval_pipeline.base.vocabulary import VALUE_OPERATORS
from datagouv_eval_pipeline.world.api import mask, query_args, render
from datagouv_eval_pipeline.world.api.hosts import PUBLIC_PATH_KEY, HostRouting, served_hosts
from datagouv_eval_pipeline.world.catalogue import (
    CatalogStore,
    DatasetFilters,
    SearchPage,
    TwinUrls,
    full_objects,
    generated,
    tabular,
)
from datagouv_eval_pipeline.world.mcp import mount_mcp

NOT_FOUND_MESSAGE = (
    "The requested URL was not found on the server. If you entered the URL manually please "
    "check your spelling and try again."
)
TABULAR_VERSION = "0.3.3.dev0"
# Served files smaller than the real ones say so (docs/decisions.md, "Twin"): the header is
# "sample" for an extract of the real rows, "true" for a stand-in, and X-Twin-Filesize gives
# the size in the metadata, which stays the real file's.
PLACEHOLDER_HEADER = "X-Twin-Placeholder"
FILESIZE_HEADER = "X-Twin-Filesize"
METRIC_MODELS = ("datasets", "resources", "organizations", "dataservices", "site")


@dataclass(frozen=True)
class TwinConfig:
    """Settings of the twin's APIs.

    Attributes:
        tabular_page_size_max: Tabular API maximum ``page_size`` (api-tabular's default config
            says 50; a live survey saw 200 — make it match what you emulate).
        tabular_page_size_default: Tabular API ``page_size`` when none is given.
        metrics_page_size_max: Metrics API maximum ``page_size``.
        metrics_page_size_default: Metrics API ``page_size`` when none is given.
        csv_export_max_rows: Above this, ``data/csv/`` answers 403 "Output is too long".
    """

    tabular_page_size_max: int = 50
    tabular_page_size_default: int = 20
    metrics_page_size_max: int = 50
    metrics_page_size_default: int = 20
    csv_export_max_rows: int = 50_000


# Bytes of rendered dataset JSON kept per app (one dataset at most 1/16 of it).
RENDER_CACHE_BYTES = 32 << 20
# JSONResponse's own encoder, so that pre-rendered fragments are byte-identical to its output.
_JSON = JSONResponse(None)


@lru_cache(maxsize=64)
def _urls_for_site(site: str) -> TwinUrls:
    return TwinUrls.for_site(site)


_LIVE = TwinUrls.live()


def _urls(request: Request) -> TwinUrls:
    """The base URLs links are rendered with: production ones behind the front."""
    if PUBLIC_PATH_KEY in request.scope:
        return _LIVE
    return _urls_for_site(str(request.base_url))


def _udata_error(status: int, message: str = NOT_FOUND_MESSAGE) -> JSONResponse:
    return JSONResponse({"message": message}, status_code=status)


class _BadParam(Exception):
    def __init__(self, name: str, detail: str) -> None:
        super().__init__(detail)
        self.name = name
        self.detail = detail


def _int_param(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise _BadParam(name, f"invalid literal for int() with base 10: {raw!r}") from None
    if value < 1:
        raise _BadParam(name, f"{name} must be greater than or equal to 1")
    return value


def _page_url(request: Request, page: int) -> str:
    params = [(k, v) for k, v in request.query_params.multi_items() if k != "page"]
    params.append(("page", str(page)))
    # Behind the front, the path the client asked for (``/api/resources/…`` on
    # tabular-api.data.gouv.fr), not the twin's internal one.
    public = request.scope.get(PUBLIC_PATH_KEY)
    url = request.url.replace(query="")
    if public is not None:
        url = url.replace(path=public)
    base = str(url)
    return f"{base}?{urlencode(params)}"


def _envelope(
    request: Request, data: list[Any], page: int, page_size: int, total: int
) -> dict[str, Any]:
    """Udata's list envelope: data, page, page_size, total, next_page, previous_page."""
    return {
        "data": data,
        "page": page,
        "page_size": page_size,
        "total": total,
        "next_page": _page_url(request, page + 1) if page * page_size < total else None,
        "previous_page": _page_url(request, page - 1) if page > 1 else None,
    }


def _search_envelope(
    request: Request, data: list[Any], page: int, page_size: int, result: SearchPage
) -> dict[str, Any]:
    """The :func:`_envelope`, ending with the v2 search's ``facets`` when there are some."""
    body = _envelope(request, data, page, page_size, result.total)
    if result.facets is not None:
        body["facets"] = result.facets
    return body


def _envelope_json(
    request: Request,
    data: list[bytes],
    page: int,
    page_size: int,
    total: int,
    extra: Mapping[str, Any] | None = None,
) -> Response:
    """The :func:`_envelope` response, with ``data`` given as items already encoded as JSON.

    The bytes are those ``JSONResponse(_envelope(...))`` gives: the list's items joined with
    ``,``, then the other keys encoded as JSONResponse encodes them, in the same order.
    """
    rest = _envelope(request, [], page, page_size, total)
    del rest["data"]
    rest.update(extra or {})  # the v2 search's "facets" follow the pager's keys
    tail = _JSON.render(rest)  # b'{"page":…}'
    body = b'{"data":[' + b",".join(data) + b"]," + tail[1:]
    return Response(body, media_type=_JSON.media_type)


class _Handlers:
    def __init__(self, store: CatalogStore, config: TwinConfig) -> None:
        self.store = store
        self.config = config
        self.hosts = served_hosts(store)
        self.started_at = datetime.now(UTC).isoformat()
        # Rendered datasets by (API version, site, id). The store never changes under an app
        # (a drift overlay builds a new store and a new app), so a rendering can be reused.
        self._rendered: OrderedDict[tuple[int, str, str], tuple[Mapping[str, Any], bytes]] = (
            OrderedDict()
        )
        self._rendered_bytes = 0

    def _dataset_json(
        self, version: int, urls: TwinUrls, record: Mapping[str, Any], masked: bool = False
    ) -> bytes:
        """Return a dataset rendered for ``urls`` and encoded as JSONResponse encodes it.

        ``masked``: the request has an ``X-Fields`` header, which replaces udata's default
        mask, so the rendering is the whole model (:func:`_marshalled` applies the header).
        """
        full = masked and version == 1  # the v2 default mask is the whole v2 model
        key = (version * 10 + full, urls.site, record["id"])
        cached = self._rendered.get(key)
        if cached is not None and cached[0] is record:
            self._rendered.move_to_end(key)
            return cached[1]
        if version == 1:
            payload = render.dataset_v1(self.store, urls, record, default_mask=not full)
        else:
            payload = render.dataset_v2(self.store, urls, record)
        encoded = _JSON.render(payload)
        if len(encoded) <= RENDER_CACHE_BYTES // 16:
            if cached is not None:
                self._rendered_bytes -= len(cached[1])
            self._rendered[key] = (record, encoded)
            self._rendered_bytes += len(encoded)
            while self._rendered_bytes > RENDER_CACHE_BYTES:
                _, (_, dropped) = self._rendered.popitem(last=False)
                self._rendered_bytes -= len(dropped)
        return encoded

    # ------------------------------------------------------------------ main API helpers

    def _pagination(self, request: Request, default_size: int) -> tuple[int, int]:
        return _int_param(request, "page", 1), _int_param(request, "page_size", default_size)

    def _search_args(
        self,
        request: Request,
        version: int,
        v1: Sequence[query_args.Arg],
        v2: Sequence[query_args.Arg],
    ) -> tuple[int, int, dict[str, Any]] | Response:
        """A search's page, page size and arguments (``v1`` or ``v2`` as declared by udata).

        udata's 400 answer for a refused one.
        """
        try:
            page, page_size = self._pagination(request, 20)
            args = query_args.parse(v1 if version == 1 else v2, request.query_params)
        except (_BadParam, query_args.ArgError) as error:
            return _validation_error(error)
        return page, page_size, args

    def _dataset_or_error(self, key: str) -> dict[str, Any] | JSONResponse:
        record = self.store.dataset(key)
        if record is None or record.get("private"):
            return _udata_error(404)
        if record.get("deleted"):
            return _udata_error(410, "Dataset has been deleted")
        return record

    def _search_datasets(self, request: Request, version: int) -> Response:
        parsed = self._search_args(request, version, query_args.DATASET_V1, query_args.DATASET_V2)
        if isinstance(parsed, Response):
            return parsed
        page, page_size, args = parsed
        if version == 1:
            # core/dataset/api.py parse_filters: identifiers are checked before the query.
            for name, label in _V1_IDENTIFIER_ARGS:
                if args.get(name) and not _is_object_id(args[name]):
                    return _udata_error(400, f"{label} arg must be an identifier")
        tags = args["tag"] or []
        result = self.store.search_datasets(
            args["q"],
            page=page,
            page_size=page_size,
            sort=args["sort"],
            last_update_range=args.get("last_update_range"),
            organization=args["organization"],
            tags=tags,
            dataservice=args.get("dataservice"),
            format=_first(args["format"]),
            badge=args["badge"],
            api=version,
            facets=version == 2,
            filters=DatasetFilters(
                license=args["license"],
                featured=args["featured"],
                granularity=_all(args["granularity"]),
                geozone=args["geozone"],
                access_type=args["access_type"],
                format_family=args.get("format_family"),
                producer_type=args.get("producer_type"),
                organization_badge=args["organization_badge"],
                organization_name=args.get("organization_name"),
                owner=args["owner"],
                schema=_all(args["schema"]),
                topic=args["topic"],
                temporal_coverage=args["temporal_coverage"],
            ),
        )
        urls = _urls(request)
        masked = _has_mask(request)
        data = [self._dataset_json(version, urls, self._found(i), masked) for i in result.ids]
        extra = {"facets": result.facets} if result.facets is not None else None
        return _envelope_json(request, data, page, page_size, result.total, extra)

    def _found(self, dataset_id: str) -> Mapping[str, Any]:
        record = self.store.dataset(dataset_id)
        assert record is not None  # search returns ids of the store
        return record

    # ------------------------------------------------------------------ main API v1

    async def datasets_v1(self, request: Request) -> Response:
        return self._search_datasets(request, 1)

    async def dataset_v1(self, request: Request) -> Response:
        record = self._dataset_or_error(request.path_params["dataset"])
        if isinstance(record, Response):
            return record
        return Response(
            self._dataset_json(1, _urls(request), record, _has_mask(request)),
            media_type=_JSON.media_type,
        )

    async def dataset_resources_v1(self, request: Request) -> Response:
        # udata's v1 ``datasets/<dataset>/resources/`` takes only POST (create) and PUT
        # (reorder), both authenticated: flask-restx answers any read with werkzeug's 405,
        # before the dataset is looked up. Resource lists are read from the v1 dataset or
        # ``api/2/datasets/<id>/resources/``.
        return JSONResponse(
            {"message": "The method is not allowed for the requested URL."},
            status_code=405,
            headers={"Allow": "OPTIONS, POST, PUT"},
        )

    async def dataset_resource_v1(self, request: Request) -> Response:
        record = self._dataset_or_error(request.path_params["dataset"])
        if isinstance(record, Response):
            return record
        for resource in record["resources"]:
            if resource["id"] == request.path_params["rid"]:
                return JSONResponse(render.resource(self.store, _urls(request), resource))
        return _udata_error(404, "Resource does not exist")

    async def dataservices_v1(self, request: Request) -> Response:
        return self._search_dataservices(request, 1)

    async def dataservice(self, request: Request) -> Response:
        record = self.store.dataservice(request.path_params["dataservice"])
        if record is None or record.get("deleted_at"):
            return _udata_error(404)
        return JSONResponse(render.dataservice(self.store, _urls(request), record))

    async def organizations_v1(self, request: Request) -> Response:
        return self._search_organizations(request, 1)

    async def organization(self, request: Request) -> Response:
        record = self.store.organization(request.path_params["org"])
        if record is None:
            return _udata_error(404)
        return JSONResponse(render.organization(self.store, _urls(request), record))

    async def organization_datasets(self, request: Request) -> Response:
        record = self.store.organization(request.path_params["org"])
        if record is None:
            return _udata_error(404)
        try:
            page, page_size = self._pagination(request, 20)
        except _BadParam as error:
            return _validation_error(error)
        result = self.store.search_datasets(
            None, page=page, page_size=page_size, organization=record["id"], api=1
        )
        urls = _urls(request)
        masked = _has_mask(request)
        data = [self._dataset_json(1, urls, self._found(i), masked) for i in result.ids]
        return _envelope_json(request, data, page, page_size, result.total)

    async def site(self, request: Request) -> Response:
        return JSONResponse(site_payload(self.store))

    # ------------------------------------------------------------------ main API v2

    async def datasets_search_v2(self, request: Request) -> Response:
        return self._search_datasets(request, 2)

    async def dataset_v2(self, request: Request) -> Response:
        record = self._dataset_or_error(request.path_params["dataset"])
        if isinstance(record, Response):
            return record
        return Response(self._dataset_json(2, _urls(request), record), media_type=_JSON.media_type)

    async def dataset_resources_v2(self, request: Request) -> Response:
        record = self._dataset_or_error(request.path_params["dataset"])
        if isinstance(record, Response):
            return record
        try:
            page, page_size = self._pagination(request, render.V2_RESOURCES_PAGE_SIZE)
        except _BadParam as error:
            return _validation_error(error)
        urls = _urls(request)
        resources = record["resources"]
        chunk = resources[(page - 1) * page_size : page * page_size]
        data = [render.resource(self.store, urls, r) for r in chunk]
        return JSONResponse(_envelope(request, data, page, page_size, len(resources)))

    async def resource_v2(self, request: Request) -> Response:
        found = self.store.resource(request.path_params["rid"])
        if found is None or found[0].get("deleted"):
            return _udata_error(404, "Resource does not exist")
        dataset, resource = found
        return JSONResponse(
            {
                "resource": render.resource(self.store, _urls(request), resource),
                "dataset_id": dataset["id"],
            }
        )

    def _search_dataservices(self, request: Request, version: int) -> Response:
        parsed = self._search_args(
            request, version, query_args.DATASERVICE_V1, query_args.DATASERVICE_V2
        )
        if isinstance(parsed, Response):
            return parsed
        page, page_size, args = parsed
        if version == 1:
            # api_fields.py: filters with the ``objectid`` constraint.
            for name in ("topic", "reuse"):
                if args.get(name) and not _is_object_id(args[name]):
                    return _udata_error(400, f"`{name}` must be an identifier")
        result = self.store.search_dataservices(
            args["q"],
            page=page,
            page_size=page_size,
            api=version,
            facets=version == 2,
            filters=args,
            sort=args["sort"],
        )
        urls = _urls(request)
        data = [
            render.dataservice(self.store, urls, self.store.dataservices[i]) for i in result.ids
        ]
        return JSONResponse(_search_envelope(request, data, page, page_size, result))

    async def dataservices_search_v2(self, request: Request) -> Response:
        return self._search_dataservices(request, 2)

    def _search_organizations(self, request: Request, version: int) -> Response:
        parsed = self._search_args(
            request, version, query_args.ORGANIZATION_V1, query_args.ORGANIZATION_V2
        )
        if isinstance(parsed, Response):
            return parsed
        page, page_size, args = parsed
        result = self.store.search_organizations(
            args["q"],
            page=page,
            page_size=page_size,
            sort=args["sort"],
            badge=args["badge"],
            name=args.get("name"),
            business_number_id=args.get("business_number_id"),
            producer_type=args.get("producer_type"),
            api=version,
            facets=version == 2,
        )
        urls = _urls(request)
        data = [
            render.organization(self.store, urls, self.store.organizations[i]) for i in result.ids
        ]
        return JSONResponse(_search_envelope(request, data, page, page_size, result))

    async def organizations_search_v2(self, request: Request) -> Response:
        return self._search_organizations(request, 2)

    # ------------------------------------------------------------------ files

    async def resource_redirect(self, request: Request) -> Response:
        found = self.store.resource(request.path_params["rid"])
        if found is None:
            return _udata_error(404, "Resource does not exist")
        _, resource = found
        target = render.resource(self.store, _urls(request), resource)["url"]
        return RedirectResponse(target, status_code=302)

    async def external(self, request: Request) -> Response:
        key = request.path_params["path"]
        if request.url.query:
            key = f"{key}?{request.url.query}"
        target = self.store.external_file(key)
        if target is None:
            return PlainTextResponse("404: Not Found", status_code=404)
        if target.kind == "spec":
            fmt, content = self.store.specs[target.ref]
            media = "application/json" if fmt == "json" else "application/yaml"
            return Response(content, media_type=media)
        found = self.store.resource(target.ref)
        assert found is not None  # the store only maps known resources
        dataset, resource = found
        table = self.store.table(resource["id"])
        if table is not None:
            # A derived file (the catalogue export, 79 MB) takes seconds to write: off the event
            # loop, so the twin's other clients are answered meanwhile.
            content = await run_in_threadpool(table.source_bytes)
            headers = {"Content-Disposition": f'attachment; filename="{_file_name(resource)}"'}
            # The rows the snapshot keeps (the Tabular API's), usually fewer than the real
            # file's, whose size the metadata keeps.
            return Response(
                content,
                media_type="text/csv; charset=utf-8",
                headers=headers | _size_headers(resource, content, "sample"),
            )
        sample = self.store.downloads.get(resource["id"])
        if sample is not None:
            # An extract of a file too large for the snapshot: say so, as for placeholders.
            content = sample.encode("utf-8")
            return Response(
                content,
                media_type="text/csv; charset=utf-8",
                headers=_size_headers(resource, content, "sample"),
            )
        return _placeholder(dataset, resource)

    # ------------------------------------------------------------------ Tabular API

    def _tabular_table(self, request: Request) -> tuple[str, tabular.Table] | Response:
        rid = request.path_params["rid"]
        gone = self.store.tabular_gone(rid)
        if gone is not None:
            # api-tabular's get_resource: aiohttp's HTTPGone with a plain-text message.
            deleted_at, dataset_id = gone
            return PlainTextResponse(
                f"Resource {rid} has been permanently deleted on {deleted_at} by its producer. "
                "You can find more information about this resource at "
                f"https://www.data.gouv.fr/datasets/{dataset_id}",
                status_code=410,
            )
        table = self.store.table(rid)
        if table is None:
            return PlainTextResponse("404: Not Found", status_code=404)
        return rid, table

    async def tabular_resource(self, request: Request) -> Response:
        found = self._tabular_table(request)
        if isinstance(found, Response):
            return found
        rid, _ = found
        located = self.store.resource(rid)
        assert located is not None
        _, resource = located
        urls = _urls(request)
        base = f"{urls.tabular_api}resources/{rid}/"
        return JSONResponse(
            {
                "created_at": resource["extras"].get("analysis:parsing:finished_at"),
                "url": render.resource(self.store, urls, resource)["url"],
                "links": [
                    {"href": f"{base}profile/", "type": "GET", "rel": "profile"},
                    {"href": f"{base}data/", "type": "GET", "rel": "data"},
                    {"href": f"{base}swagger/", "type": "GET", "rel": "swagger"},
                ],
            }
        )

    async def tabular_profile(self, request: Request) -> Response:
        found = self._tabular_table(request)
        if isinstance(found, Response):
            return found
        rid, _ = found
        located = self.store.resource(rid)
        assert located is not None
        indexes = [
            {"column": column, "index_type": kind}
            for entry in self.store.crawler_exceptions
            if entry["resource_id"] == rid
            for column, kind in entry.get("table_indexes", {}).items()
        ]
        return JSONResponse(
            {
                "profile": self.store.profile(rid),
                "deleted_at": None,
                "dataset_id": located[0]["id"],
                "indexes": indexes or None,
            }
        )

    def _query(
        self, request: Request, table: tabular.Table, max_size: int, default_size: int
    ) -> tabular.TabularQuery | Response:
        try:
            return tabular.parse_query(
                table,
                tabular.query_pairs(request.url.query),
                page_size_max=max_size,
                page_size_default=default_size,
                resource_id=str(request.path_params.get("rid", "")),
            )
        except tabular.QueryError as error:
            return JSONResponse(error.body, status_code=error.status)

    def _data_response(
        self,
        request: Request,
        table: tabular.Table,
        query: tabular.TabularQuery,
        links: dict[str, Any],
    ) -> Response:
        result = tabular.run_query(table, query)
        # api-tabular's ``build_next_page``: ``page_size + offset < total``.
        more = query.page_size + tabular.page_offset(query.page, query.page_size) < result.total
        links["next"] = _page_url(request, query.page + 1) if more else None
        links["prev"] = _page_url(request, query.page - 1) if query.page > 1 else None
        meta = {"page": query.page, "page_size": query.page_size, "total": result.total}
        return JSONResponse({"data": result.rows, "links": links, "meta": meta})

    async def tabular_data(self, request: Request) -> Response:
        found = self._tabular_table(request)
        if isinstance(found, Response):
            return found
        rid, table = found
        query = self._query(
            request,
            table,
            self.config.tabular_page_size_max,
            self.config.tabular_page_size_default,
        )
        if isinstance(query, Response):
            return query
        base = f"{_urls(request).tabular_api}resources/{rid}/"
        links: dict[str, Any] = {"profile": f"{base}profile/", "swagger": f"{base}swagger/"}
        return self._data_response(request, table, query, links)

    def _export_rows(
        self, request: Request, table: tabular.Table, max_size: int
    ) -> tuple[list[int], tuple[int, ...]] | Response:
        """The rows (in query order) and columns of a whole-result export, or its error."""
        # api-tabular builds an export's query without pagination: `page` and `page_size`
        # are skipped, whatever their value (core/query.py).
        pairs = [
            (key, value)
            for key, value in tabular.query_pairs(request.url.query)
            if key not in ("page", "page_size")
        ]
        try:
            query = tabular.parse_query(
                table,
                pairs,
                page_size_max=max_size,
                page_size_default=max_size,
                resource_id=str(request.path_params.get("rid", "")),
            )
        except tabular.QueryError as error:
            return JSONResponse(error.body, status_code=error.status)
        indices = tabular.ordered_indices(table, query)
        if len(indices) > self.config.csv_export_max_rows:
            too_long = tabular.QueryError.too_long(self.config.csv_export_max_rows)
            return JSONResponse(too_long.body, status_code=too_long.status)
        positions = table.served_positions() if query.positions is None else query.positions
        return indices, positions

    def _csv_export(
        self, request: Request, table: tabular.Table, max_size: int, name: str
    ) -> Response:
        found = self._export_rows(request, table, max_size)
        if isinstance(found, Response):
            return found
        indices, positions = found
        return Response(
            tabular.postgrest_csv(table, indices, positions),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
        )

    async def tabular_csv(self, request: Request) -> Response:
        found = self._tabular_table(request)
        if isinstance(found, Response):
            return found
        rid, table = found
        return self._csv_export(request, table, self.config.tabular_page_size_max, rid)

    async def tabular_json(self, request: Request) -> Response:
        found = self._tabular_table(request)
        if isinstance(found, Response):
            return found
        rid, table = found
        rows = self._export_rows(request, table, self.config.tabular_page_size_max)
        if isinstance(rows, Response):
            return rows
        indices, positions = rows
        return StreamingResponse(
            _json_rows(table, indices, positions),
            media_type="application/json",
            headers={"Content-Disposition": f'attachment; filename="{rid}.json"'},
        )

    async def tabular_aggregation_exceptions(self, request: Request) -> Response:
        # api-tabular's configuration: aggregation off, except for the listed resources. The
        # twin computes no aggregation, so its list is empty (and every aggregation is a 403).
        return JSONResponse({"allowed": False, "exceptions": []})

    async def tabular_swagger(self, request: Request) -> Response:
        found = self._tabular_table(request)
        if isinstance(found, Response):
            return found
        rid, table = found
        return JSONResponse(_resource_swagger(_urls(request), rid, table))

    async def tabular_health(self, request: Request) -> Response:
        return JSONResponse(
            {"status": "ok", "version": TABULAR_VERSION, "uptime_since": self.started_at}
        )

    # ------------------------------------------------------------------ Metrics API

    def _metrics_table(self, request: Request) -> tabular.Table | Response:
        table = self.store.metrics.get(request.path_params["model"])
        if table is None:
            return PlainTextResponse("404: Not Found", status_code=404)
        return table

    async def metrics_data(self, request: Request) -> Response:
        table = self._metrics_table(request)
        if isinstance(table, Response):
            return table
        query = self._query(
            request,
            table,
            self.config.metrics_page_size_max,
            self.config.metrics_page_size_default,
        )
        if isinstance(query, Response):
            return query
        return self._data_response(request, table, query, {})

    async def metrics_csv(self, request: Request) -> Response:
        table = self._metrics_table(request)
        if isinstance(table, Response):
            return table
        return self._csv_export(
            request, table, self.config.metrics_page_size_max, request.path_params["model"]
        )

    # ------------------------------------------------------------------ crawler and twin

    async def crawler_exceptions(self, request: Request) -> Response:
        return JSONResponse(self.store.crawler_exceptions)

    async def crawler_health(self, request: Request) -> Response:
        return JSONResponse({"version": "twin", "environment": "twin", "csv_to_db": True})

    async def twin_health(self, request: Request) -> Response:
        return JSONResponse(
            {
                "status": "ok",
                "snapshot_id": self.store.snapshot_id,
                "snapshot_created_at": self.store.now.isoformat(),
                "uptime_since": self.started_at,
                "urls": _urls(request).as_dict(),
                # The production host names this twin answers for (behind the front).
                "hosts": sorted(self.hosts),
            }
        )

    # ------------------------------------------------------------------ HTML pages

    async def dataset_page(self, request: Request) -> Response:
        record = self.store.dataset(request.path_params["dataset"])
        if record is None or record.get("deleted"):
            return _html_not_found()
        urls = _urls(request)
        org = record.get("organization") or {}
        items = "".join(
            f'<li><a href="{urls.site}datasets/r/{html.escape(r["id"])}">'
            f"{html.escape(r['title'])}</a>"
            f" ({html.escape(r['format'])})</li>"
            for r in record["resources"]
        )
        archived = (
            "<p><strong>Jeu de données archivé</strong></p>" if record.get("archived") else ""
        )
        body = (
            f"<h1>{html.escape(record['title'])}</h1>{archived}"
            f"<p>Publié par {html.escape(org.get('name', ''))} — mis à jour le "
            f"{html.escape(record['last_update'][:10])}</p>"
            f"<pre>{html.escape(record.get('description') or '')}</pre>"
            f"<h2>Ressources</h2><ul>{items}</ul>"
        )
        return HTMLResponse(_page(record["title"], body))

    async def dataservice_page(self, request: Request) -> Response:
        record = self.store.dataservice(request.path_params["dataservice"])
        if record is None:
            return _html_not_found()
        payload = render.dataservice(self.store, _urls(request), record)
        spec = payload.get("machine_documentation_url")
        spec_html = (
            f'<p><a href="{html.escape(spec)}">Spécification OpenAPI</a></p>' if spec else ""
        )
        body = (
            f"<h1>{html.escape(record['title'])}</h1>"
            f"<p>URL de base : {html.escape(record.get('base_api_url') or '')}</p>{spec_html}"
            f"<pre>{html.escape(record.get('description') or '')}</pre>"
        )
        return HTMLResponse(_page(record["title"], body))

    async def organization_page(self, request: Request) -> Response:
        record = self.store.organization(request.path_params["org"])
        if record is None:
            return _html_not_found()
        description = html.escape(record.get("description") or "")
        body = f"<h1>{html.escape(record['name'])}</h1><p>{description}</p>"
        return HTMLResponse(_page(record["name"], body))


Handler = Callable[[Request], Awaitable[Response]]


def _has_mask(request: Request) -> bool:
    return bool(request.headers.get(mask.HEADER, "").strip())


def _full_objects(handler: Handler, api: int, *, listing: bool) -> Handler:
    """Give a dataset endpoint udata's ``X-Get-Datasets-Full-Objects`` header.

    The rendering is udata's default (ids and strings); with the header, the 200 body's
    dataset (or each of a list's ``data``) is rewritten by :mod:`~.full_objects` before any
    ``X-Fields`` mask applies, as udata's field functions run inside marshalling.
    """

    async def full(request: Request) -> Response:
        response = await handler(request)
        if not full_objects.wanted(request.headers) or response.status_code != 200:
            return response
        body = json.loads(bytes(response.body))
        if listing:
            body["data"] = [full_objects.dataset(d, api) for d in body["data"]]
        else:
            body = full_objects.dataset(body, api)
        return JSONResponse(body)

    return full


def _marshalled(handler: Handler) -> Handler:
    """Give a udata endpoint flask-restx's ``X-Fields`` header (:mod:`~.mask`).

    As with ``marshal_with``, the mask is read only when the endpoint answers 200 (errors are
    raised before marshalling), and a header replaces the endpoint's default mask, which the
    renderings already apply.
    """

    async def masked(request: Request) -> Response:
        response = await handler(request)
        if not _has_mask(request) or response.status_code != 200:
            return response
        try:
            header = request.headers[mask.HEADER]
            body = mask.apply(mask.parse(header), json.loads(bytes(response.body)))
        except mask.MaskError as error:
            return _udata_error(400, error.message)
        return JSONResponse(body)

    return masked


UDATA_VERSION = "17.6.0"
"""The udata release whose API the twin answers as (its search and filter rules)."""


def site_payload(store: CatalogStore) -> dict[str, Any]:
    """``/api/1/site/``: udata's ``Site`` read fields, every ``__metrics_keys__`` metric.

    Counts the snapshot holds are computed (visible datasets, their resources, dataservices,
    organizations, public-service organizations, the maxima over datasets and
    organizations); sums of the datasets' own counters stand in for the site-wide ones
    (``discussions``, ``followers``, ``reuses``); what the snapshot cannot know (users,
    harvest sources, the monthly series) is 0 or empty.
    """
    visible = [d for d in store.datasets.values() if store._visible_dataset(d)]
    orgs = list(store.organizations.values())
    totals = {"followers": 0, "reuses": 0, "discussions": 0}
    max_followers = max((d["metrics"].get("followers", 0) for d in visible), default=0)
    max_reuses = max((d["metrics"].get("reuses", 0) for d in visible), default=0)
    resources = sum(len(d["resources"]) for d in visible)
    for d in visible:
        for key in totals:
            totals[key] += int(d["metrics"].get(key, 0) or 0)
    if store.catalogue is not None:
        live = ~store.catalogue.archived()
        resources += int(store.catalogue.ints("resources_count")[live].sum())
        for key in totals:
            totals[key] += int(store.catalogue.ints(key)[live].sum())
        max_followers = max(max_followers, int(store.catalogue.ints("followers")[live].max()))
        max_reuses = max(max_reuses, int(store.catalogue.ints("reuses")[live].max()))
    totals["followers"] += sum(int(o["metrics"].get("followers", 0) or 0) for o in orgs)

    def org_max(key: str) -> int:
        return max((int(o["metrics"].get(key, 0) or 0) for o in orgs), default=0)

    metrics: dict[str, Any] = {
        "max_dataset_followers": max_followers,
        "max_dataset_reuses": max_reuses,
        "max_reuse_datasets": 0,
        "max_reuse_followers": 0,
        "max_org_followers": org_max("followers"),
        "max_org_reuses": org_max("reuses"),
        "max_org_datasets": org_max("datasets"),
        "datasets": store.dataset_count()[1],
        "datasets_visits_by_months": {},
        "discussions": totals["discussions"],
        "followers": totals["followers"],
        "organizations": sum(1 for o in orgs if not o.get("deleted")),
        "public-service": sum(
            1 for o in orgs if any(b.get("kind") == "public-service" for b in o.get("badges", []))
        ),
        "resources": resources,
        "resources_downloads_by_months": {},
        "reuses": totals["reuses"],
        "dataservices": sum(
            1
            for d in store.dataservices.values()
            if not d.get("deleted_at") and not d.get("archived_at")
        ),
        "users": 0,
        "harvesters": 0,
        "users_by_months": {},
        "datasets_by_months": {},
        "harvesters_by_months": {},
        "reuses_by_months": {},
        "organizations_by_months": {},
        "discussions_by_months": {},
    }
    return {
        "id": "www.data.gouv.fr",
        "title": "data.gouv.fr",
        "keywords": [],
        "feed_size": 20,
        "metrics": metrics,
        "version": UDATA_VERSION,
    }


# v1 dataset filters udata checks are ObjectIds (argument, name in the message).
_V1_IDENTIFIER_ARGS = (
    ("organization", "Organization"),
    ("owner", "Owner"),
    ("followed_by", "`followed_by`"),
    ("topic", "Topic"),
    ("dataservice", "Dataservice"),
    ("reuse", "Reuse"),
)


def _is_object_id(value: str) -> bool:
    """Whether ``value`` is 24 hexadecimal digits (bson's ``ObjectId.is_valid``)."""
    return len(value) == 24 and all(c in "0123456789abcdefABCDEF" for c in value)


def _first(value: str | list[str] | None) -> str | None:
    """One value of an argument v1 declares single and v2 repeatable (the first)."""
    if isinstance(value, list):
        return value[0] if value else None
    return value


def _all(value: str | list[str] | None) -> tuple[str, ...]:
    """Every value of an argument v1 declares single and v2 repeatable."""
    if value is None:
        return ()
    return tuple(value) if isinstance(value, list) else (value,)


def _validation_error(error: _BadParam | query_args.ArgError) -> JSONResponse:
    return JSONResponse(
        {"errors": {error.name: error.detail}, "message": "Input payload validation failed"},
        status_code=400,
    )


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="fr"><head><meta charset="utf-8"><title>'
        f"{html.escape(title)} - data.gouv.fr</title></head><body>{body}</body></html>"
    )


def _html_not_found() -> HTMLResponse:
    return HTMLResponse(_page("Page non trouvée", "<h1>Page non trouvée</h1>"), status_code=404)


def _file_name(resource: dict[str, Any]) -> str:
    url = str(resource.get("url") or "")
    name = url.rstrip("/").rsplit("/", 1)[-1] or resource["id"]
    return name.split("?", 1)[0]


_MINIMAL_PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\n"
    b"trailer<</Root 1 0 R>>\n%%EOF\n"
)


GENERATED_HEADER = "X-Twin-Generated"
"""Header of a download whose resource the twin generated from the catalogue's facts."""


def _size_headers(resource: Mapping[str, Any], content: bytes, kind: str) -> dict[str, str]:
    """Mark served bytes that are not the whole file the metadata describes.

    Nothing when the bytes are the file (their length is the metadata's ``filesize``, or the
    metadata has no size); otherwise ``X-Twin-Placeholder: <kind>`` and, when known,
    ``X-Twin-Filesize: <the metadata's filesize>``.
    """
    size = resource.get("filesize")
    if kind == "sample" and (not size or int(size) == len(content)):
        return {}
    headers = {PLACEHOLDER_HEADER: kind}
    if size:
        headers[FILESIZE_HEADER] = str(int(size))
    return headers


def _placeholder(dataset: dict[str, Any], resource: dict[str, Any]) -> Response:
    """Serve a small stand-in for a file the snapshot does not contain."""
    note = (
        f"Placeholder served by the data.gouv.fr twin for resource {resource['id']} "
        f"({resource['title']}, dataset {dataset['id']}): the real file"
        + (f" ({resource['filesize']} bytes)" if resource.get("filesize") else "")
        + " is not part of the snapshot."
        + (
            " This resource is generated from the catalogue export's facts (its count, format"
            " and dates are real; its title, size and content are not)."
            if generated.mark(resource)
            else ""
        )
        + "\n"
    )
    headers = _size_headers(resource, b"", "true")
    if generated.mark(resource):
        headers[GENERATED_HEADER] = "true"
    fmt = str(resource.get("format") or "").lower()
    if fmt == "csv":
        header = resource.get("_twin", {}).get("sample_header")
        body = (header + "\n") if header else "note\n" + json.dumps(note.strip()) + "\n"
        return Response(body, media_type="text/csv; charset=utf-8", headers=headers)
    if fmt == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            info = zipfile.ZipInfo("LISEZMOI.txt", date_time=(2026, 1, 1, 0, 0, 0))
            archive.writestr(info, note)
        return Response(buffer.getvalue(), media_type="application/zip", headers=headers)
    if fmt == "pdf":
        return Response(_MINIMAL_PDF, media_type="application/pdf", headers=headers)
    if fmt in ("json", "geojson", "jsonl"):
        content = json.dumps({"twin_placeholder": True, "note": note.strip()}, ensure_ascii=False)
        return Response(content, media_type="application/json", headers=headers)
    return PlainTextResponse(note, headers=headers)


def _json_rows(
    table: tabular.Table, indices: Sequence[int], positions: Sequence[int]
) -> Iterator[bytes]:
    """Yield a JSON export in chunks, laid out as api-tabular streams PostgREST's body.

    PostgREST aggregates the rows with PostgreSQL's ``json_agg`` (a comma, a newline and a
    space between rows), and api-tabular writes a newline after the body.
    """
    yield b"["
    chunk: list[str] = []
    for number, index in enumerate(indices):
        row = json.dumps(
            table.row_dict(index, positions), ensure_ascii=False, separators=(",", ":")
        )
        chunk.append(row if number == 0 else ", \n " + row)
        if len(chunk) >= 500:
            yield "".join(chunk).encode("utf-8")
            chunk = []
    chunk.append("]\n")
    yield "".join(chunk).encode("utf-8")


def _resource_swagger(urls: TwinUrls, rid: str, table: tabular.Table) -> dict[str, Any]:
    """A per-resource OpenAPI document listing the column filters (like api-tabular's)."""
    parameters: list[dict[str, Any]] = [
        {"name": "page", "in": "query", "schema": {"type": "integer"}},
        {"name": "page_size", "in": "query", "schema": {"type": "integer"}},
    ]
    for column in table.columns:
        for operator in VALUE_OPERATORS:
            parameters.append(
                {"name": f"{column.name}__{operator}", "in": "query", "schema": {"type": "string"}}
            )
        parameters.append(
            {
                "name": f"{column.name}__sort",
                "in": "query",
                "schema": {"type": "string", "enum": ["asc", "desc"]},
            }
        )
    return {
        "openapi": "3.0.3",
        "info": {"title": f"Resource {rid}", "version": TABULAR_VERSION},
        "servers": [{"url": urls.tabular_api.rstrip("/")}],
        "paths": {
            f"/resources/{rid}/data/": {
                "get": {"parameters": parameters, "responses": {"200": {"description": "Rows"}}}
            }
        },
    }


async def _not_found(request: Request, exc: Exception) -> Response:
    path = request.url.path
    if path.startswith(("/tabular/", "/metrics/", "/crawler/", "/_ext/")):
        return PlainTextResponse("404: Not Found", status_code=404)
    if path.startswith("/api/"):
        return _udata_error(404)
    return _html_not_found()


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return await _not_found(request, exc)
    return PlainTextResponse(str(exc.detail), status_code=exc.status_code)


def create_app(
    store: CatalogStore,
    config: TwinConfig | None = None,
    *,
    mcp_versions: Sequence[str] | None = None,
) -> ASGIApp:
    """Build the twin's ASGI application over a loaded catalog.

    Args:
        store: The loaded snapshot.
        config: API settings (page-size limits); defaults to :class:`TwinConfig`.
        mcp_versions: MCP server releases to serve at ``/mcp/v{version}/mcp`` (default: all
            in ``twin.mcp.versions``; ``()`` serves none).

    Returns:
        An ASGI app (production host names routed by :class:`~.hosts.HostRouting`); serve it
        with uvicorn (``lifespan="on"``, which runs the MCP session
        managers) or call it through ``httpx.ASGITransport``.
    """
    h = _Handlers(store, config or TwinConfig())
    routes = [
        Route("/_twin/health", h.twin_health),
        # main API v1
        Route("/api/1/site/", _marshalled(h.site)),
        Route("/api/1/datasets/", _marshalled(_full_objects(h.datasets_v1, 1, listing=True))),
        Route("/api/1/datasets/r/{rid}", h.resource_redirect),
        Route(
            "/api/1/datasets/{dataset}/",
            _marshalled(_full_objects(h.dataset_v1, 1, listing=False)),
        ),
        Route("/api/1/datasets/{dataset}/resources/", h.dataset_resources_v1),
        Route("/api/1/datasets/{dataset}/resources/{rid}/", _marshalled(h.dataset_resource_v1)),
        Route("/api/1/dataservices/", _marshalled(h.dataservices_v1)),
        Route("/api/1/dataservices/{dataservice}/", _marshalled(h.dataservice)),
        Route("/api/1/organizations/", _marshalled(h.organizations_v1)),
        Route("/api/1/organizations/{org}/", _marshalled(h.organization)),
        Route(
            "/api/1/organizations/{org}/datasets/",
            _marshalled(_full_objects(h.organization_datasets, 1, listing=True)),
        ),
        # main API v2
        Route(
            "/api/2/datasets/search/",
            _marshalled(_full_objects(h.datasets_search_v2, 2, listing=True)),
        ),
        Route("/api/2/datasets/resources/{rid}/", _marshalled(h.resource_v2)),
        Route(
            "/api/2/datasets/{dataset}/",
            _marshalled(_full_objects(h.dataset_v2, 2, listing=False)),
        ),
        Route("/api/2/datasets/{dataset}/resources/", _marshalled(h.dataset_resources_v2)),
        Route("/api/2/dataservices/search/", _marshalled(h.dataservices_search_v2)),
        Route("/api/2/organizations/search/", _marshalled(h.organizations_search_v2)),
        # Tabular API
        Route("/tabular/health/", h.tabular_health),
        Route("/tabular/api/resources/{rid}/", h.tabular_resource),
        Route("/tabular/api/resources/{rid}/profile/", h.tabular_profile),
        Route("/tabular/api/resources/{rid}/data/", h.tabular_data),
        Route("/tabular/api/resources/{rid}/data/csv/", h.tabular_csv),
        Route("/tabular/api/resources/{rid}/data/json/", h.tabular_json),
        Route("/tabular/api/aggregation-exceptions/", h.tabular_aggregation_exceptions),
        Route("/tabular/api/resources/{rid}/swagger/", h.tabular_swagger),
        # Metrics API
        Route("/metrics/api/{model}/data/", h.metrics_data),
        Route("/metrics/api/{model}/data/csv/", h.metrics_csv),
        # crawler
        Route("/crawler/api/resources-exceptions", h.crawler_exceptions),
        Route("/crawler/api/health", h.crawler_health),
        # files and pages
        Route("/datasets/r/{rid}", h.resource_redirect),
        Route("/_ext/{path:path}", h.external),
        Route("/datasets/{dataset}/", h.dataset_page),
        Route("/dataservices/{dataservice}/", h.dataservice_page),
        Route("/organizations/{org}/", h.organization_page),
    ]
    rest = Starlette(routes=routes, exception_handlers={HTTPException: _http_error})
    app = HostRouting(rest, h.hosts - frozenset(SERVICE_HOSTS))
    if mcp_versions is not None and not mcp_versions:
        return app
    return mount_mcp(app, mcp_versions, hosts=app.hosts)
