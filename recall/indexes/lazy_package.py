"""A package whose submodules import as usual, but whose own `__init__` waits.

`import lancedb` imports `lance_namespace`, which imports the models of the
generated REST client `lance_namespace_urllib3_client`. Importing any module
of that package first runs the package's `__init__`, which imports every REST
API module of the client as well: 1.7 s of lancedb's 2.9 s import on the
machines here, and 12 MB of every process that opens a LanceDB table, for a
client a local table never calls. (Lance defers its own import of that client
the same way, since lance pull request 9273.)

`defer_init(name)` registers the package before anything imports it: a module
with the package's path, so `name.models` and the like import and run as they
would, and a module `__getattr__` that runs the real `__init__` the first time
one of the package's own names is read, so such a read still finds it.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from typing import Any

_lock = threading.RLock()


def defer_init(name: str) -> None:
    """Register package `name` with its `__init__` run on first use (see above).

    Nothing happens when it is imported already, or is not an installed package.
    """
    with _lock:
        if name in sys.modules:
            return
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return
        package = importlib.util.module_from_spec(spec)  # __path__, __spec__, no code run
        loader = spec.loader

        def first_use(attr: str) -> Any:
            with _lock:
                if vars(package).get("__getattr__") is first_use:
                    del package.__getattr__
                    loader.exec_module(package)
            return getattr(package, attr)

        package.__getattr__ = first_use  # type: ignore[method-assign]
        sys.modules[name] = package
