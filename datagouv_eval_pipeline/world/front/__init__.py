"""The hostname front: production host names answered locally, through an HTTPS proxy.

    with TwinServer() as urls, twin_front(urls) as front:   # twin.front
        subprocess.run(cmd, env=os.environ | front.client_env())

:class:`~.proxy.Front` is the proxy, :class:`~.authority.CertificateAuthority` the local CA
of the twin home (:func:`~.home.twin_home`), :class:`~.allow.AllowList` what a proxy may pass
to the real network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.world.front.allow import AllowList
    from datagouv_eval_pipeline.world.front.authority import CertificateAuthority
    from datagouv_eval_pipeline.world.front.home import (
        TWIN_HOME_ENV,
        TwinHomeError,
        require_twin_home,
        twin_home,
    )
    from datagouv_eval_pipeline.world.front.proxy import (
        CA_BUNDLE_VARS,
        Front,
        ServedHosts,
        WireRequest,
        export_lines,
    )

_MODULE_OF: dict[str, str] = {
    "AllowList": ".allow",
    "CA_BUNDLE_VARS": ".proxy",
    "CertificateAuthority": ".authority",
    "Front": ".proxy",
    "ServedHosts": ".proxy",
    "TWIN_HOME_ENV": ".home",
    "TwinHomeError": ".home",
    "WireRequest": ".proxy",
    "export_lines": ".proxy",
    "require_twin_home": ".home",
    "twin_home": ".home",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "CA_BUNDLE_VARS",
    "TWIN_HOME_ENV",
    "AllowList",
    "CertificateAuthority",
    "Front",
    "ServedHosts",
    "TwinHomeError",
    "WireRequest",
    "export_lines",
    "require_twin_home",
    "twin_home",
]
