"""Turn snapshot records into API payloads for a given set of base URLs.

Records keep the real data.gouv.fr URLs. When served, links to www.data.gouv.fr move to the
twin's site and API roots, and files the catalog locates on other hosts (resource files,
OpenAPI specs) move under the twin's ``/_ext/`` route, which serves them. Internal ``_twin``
keys never leave this module.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from datagouv_eval_pipeline.world.api import mask
from datagouv_eval_pipeline.world.catalogue import CatalogStore, TwinUrls

_REAL_API = "https://www.data.gouv.fr/api/"
_REAL_SITE = "https://www.data.gouv.fr/"
V2_RESOURCES_PAGE_SIZE = 50

# Udata marshals datasets through a default mask when no X-Fields header is sent (v1:
# DEFAULT_MASK in core/dataset/api_fields.py, which leaves the model's ``community_resources``
# out; v2: DEFAULT_MASK_APIV2 in core/dataset/apiv2.py, every field of the v2 model, which has
# no ``schema``). The list endpoints use ``data{<mask>},*``, the same on each item. A header
# replaces the default mask, so ``X-Fields: *`` brings v1's community resources back, while
# nothing brings a v2 ``schema``: the model has none.
_DATASET_FIELDS_BOTH = (
    "id,title,acronym,slug,description,description_short,created_at,last_modified,deleted,"
    "private,tags,badges,resources,frequency,frequency_date,extras,harvest,metrics,"
    "organization,owner,temporal_coverage,spatial,license,access_type,access_audiences,"
    "authorization_request_url,access_type_reason_category,access_type_reason,uri,page,"
    "last_update,archived,quality,internal,contact_points,featured,permissions"
)
DATASET_DEFAULT_MASK_V1 = mask.parse(_DATASET_FIELDS_BOTH + ",schema")
DATASET_DEFAULT_MASK_V2 = mask.parse(_DATASET_FIELDS_BOTH + ",community_resources")


def rewrite(value: Any, urls: TwinUrls) -> Any:
    """Deep-copy ``value``, pointing data.gouv.fr links at ``urls`` and dropping ``_twin`` keys."""
    return _Rewriter(urls.site, urls.datagouv_api).copy(value)


# Values copied as they are. Records come from JSON, so exact types are the common case; the
# isinstance() fallbacks below keep subclasses (a str subclass, say) handled as before.
_LEAVES = frozenset({int, float, bool, type(None)})


class _Rewriter:
    """One rewrite's targets, with type tests by identity first (most values are plain JSON)."""

    __slots__ = ("_api", "_site")

    def __init__(self, site: str, api: str) -> None:
        self._site = site
        self._api = api

    def text(self, value: str) -> str:
        # _REAL_API starts with _REAL_SITE, so one test rules out most strings.
        if not value.startswith(_REAL_SITE):
            return value
        if value.startswith(_REAL_API):
            return self._api + value[len(_REAL_API) :]
        return self._site + value[len(_REAL_SITE) :]

    def copy(self, value: Any) -> Any:
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is dict:
            return self.mapping(value)
        if kind is list:
            return self.sequence(value)
        if kind in _LEAVES:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return self.mapping(value)
        if isinstance(value, list):
            return self.sequence(value)
        return value

    def mapping(self, value: dict[Any, Any]) -> dict[Any, Any]:
        copy = self.copy
        text = self.text
        leaves = _LEAVES
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if key == "_twin":
                continue
            kind = type(item)
            if kind is str:
                out[key] = text(item)
            elif kind in leaves:
                out[key] = item
            else:
                out[key] = copy(item)
        return out

    def sequence(self, value: list[Any]) -> list[Any]:
        copy = self.copy
        return [item if type(item) in _LEAVES else copy(item) for item in value]


def _served(store: CatalogStore, urls: TwinUrls, url: str | None) -> str | None:
    if url and store.is_external_served(url):
        return urls.external(url)
    return rewrite(url, urls) if url else url


def resource(store: CatalogStore, urls: TwinUrls, record: Mapping[str, Any]) -> dict[str, Any]:
    """Return a resource object (same shape in v1 and v2)."""
    payload: dict[str, Any] = rewrite(record, urls)
    payload["url"] = _served(store, urls, record.get("url"))
    return payload


def dataset_v1(
    store: CatalogStore,
    urls: TwinUrls,
    record: Mapping[str, Any],
    *,
    default_mask: bool = True,
) -> dict[str, Any]:
    """Return a v1 dataset: ``resources`` is the full list of resource objects.

    Args:
        store: The catalog the resources' files are looked up in.
        urls: The base URLs links are rendered with.
        record: The snapshot's dataset record.
        default_mask: Apply udata's v1 default mask (no ``community_resources``), as
            production does unless the request has an ``X-Fields`` header.
    """
    payload: dict[str, Any] = rewrite(record, urls)
    payload["resources"] = [resource(store, urls, r) for r in record["resources"]]
    _with_permissions(payload)
    if not default_mask:
        return payload
    masked: dict[str, Any] = mask.apply(DATASET_DEFAULT_MASK_V1, payload)
    return masked


def _link(urls: TwinUrls, href: str, total: int) -> dict[str, Any]:
    return {"rel": "subsection", "href": href, "type": "GET", "total": total}


def dataset_v2(store: CatalogStore, urls: TwinUrls, record: Mapping[str, Any]) -> dict[str, Any]:
    """Return a v2 dataset: ``resources`` and ``community_resources`` are link objects.

    Only the v2 model's fields (udata's v2 default mask lists them all): no ``schema``.
    """
    payload: dict[str, Any] = rewrite({k: v for k, v in record.items() if k != "resources"}, urls)
    _with_permissions(payload)
    base = f"{urls.datagouv_api}2/datasets/{record['id']}"
    ordered: dict[str, Any] = {}
    for key, value in payload.items():
        if key == "community_resources":
            ordered["resources"] = _link(
                urls,
                f"{base}/resources/?page=1&page_size={V2_RESOURCES_PAGE_SIZE}",
                len(record["resources"]),
            )
            ordered["community_resources"] = _link(
                urls,
                f"{urls.datagouv_api}2/datasets/community_resources/?dataset={record['id']}"
                f"&page=1&page_size={V2_RESOURCES_PAGE_SIZE}",
                len(record.get("community_resources", [])),
            )
        else:
            ordered[key] = value
    masked: dict[str, Any] = mask.apply(DATASET_DEFAULT_MASK_V2, ordered)
    return masked


# udata core/organization/models.py (17.6.0) ``permissions``, an anonymous reader's answer:
# shown on the organization and on its references (``show_as_ref``).
ORGANIZATION_PERMISSIONS = {
    "edit": False,
    "delete": False,
    "members": False,
    "harvest": False,
    "private": False,
}
# Fields of udata's Organization the snapshot's records may lack, with their empty values and
# the field they follow in the model (``url``, ``image_url``, ``logo``; ``members``, ``teams``,
# ``ext``, ``zone``).
_ORGANIZATION_DEFAULTS: tuple[tuple[str, str, Any], ...] = (
    ("image_url", "url", None),
    ("teams", "members", []),
    ("ext", "teams", {}),
    ("zone", "ext", None),
)


def _with_permissions(payload: dict[str, Any]) -> None:
    if isinstance(payload.get("organization"), dict):
        payload["organization"] = organization_ref(payload["organization"])


def organization_ref(ref: Mapping[str, Any]) -> dict[str, Any]:
    """An organization reference with its ``permissions``, as udata shows references."""
    return {**ref, "permissions": dict(ORGANIZATION_PERMISSIONS)}


def organization(store: CatalogStore, urls: TwinUrls, record: Mapping[str, Any]) -> dict[str, Any]:
    """Return an organization object (udata's fields the record lacks at their defaults)."""
    result: dict[str, Any] = rewrite(record, urls)
    for name, after, default in _ORGANIZATION_DEFAULTS:
        if name in result:
            continue
        keys = list(result)
        at = keys.index(after) + 1 if after in result else len(keys)
        items = list(result.items())
        items.insert(at, (name, copy.deepcopy(default)))
        result = dict(items)
    result.setdefault("permissions", dict(ORGANIZATION_PERMISSIONS))
    return result


def dataservice(store: CatalogStore, urls: TwinUrls, record: Mapping[str, Any]) -> dict[str, Any]:
    """Return a dataservice object with its spec URL on the twin when the twin serves it."""
    payload: dict[str, Any] = rewrite(record, urls)
    if record["id"] in store.specs:
        payload["machine_documentation_url"] = urls.external(record["machine_documentation_url"])
    return payload
