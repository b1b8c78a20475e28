"""The hostname front: production host names answered locally, through an HTTPS proxy.

    with TwinServer() as urls, twin_front(urls) as front:   # twin.front
        subprocess.run(cmd, env=os.environ | front.client_env())

:class:`~.proxy.Front` is the proxy, :class:`~.authority.CertificateAuthority` the local CA
of the twin home (:func:`~.home.twin_home`), :class:`~.allow.AllowList` what a proxy may pass
to the real network.
"""

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
