"""LanceDB imported without running its REST namespace client's package init.

``import lancedb`` imports ``lance_namespace``, which imports the request and response models
of ``lance_namespace_urllib3_client.models``. Importing that subpackage runs the client
package's ``__init__`` first, and the init imports every REST API class: about 370 methods,
each wrapped in pydantic's ``validate_call``, whose validators are built at import. Measured
on the 2-core VM: ``import lancedb`` 1.56-1.61 s, of which 0.8 s is that init; Tessera
never talks to a REST namespace, so every process that opens the store (the CLI, each
Dagster step process, a run) paid it for nothing.

:func:`defer_package_init` registers such a package with its submodules importable (its
``__path__`` is set) but its ``__init__`` not run; the first attribute the init would
define runs it, once, so code that does use the REST client gets the whole package.
No library offers this: ``importlib.util.LazyLoader`` runs the init on the first attribute
access of any kind, and the import system reads ``__path__`` to import a submodule.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from typing import Any

REST_CLIENT = "lance_namespace_urllib3_client"
"""The package whose init :mod:`tessera.store` defers (``tessera/store/__init__.py``)."""

_HOOK = "__getattr__"


def defer_package_init(name: str) -> bool:
    """Register package ``name`` with its ``__init__`` deferred to the first attribute it
    would define; its submodules import as usual meanwhile. False, and nothing done, when
    ``name`` is imported already or is not an installed package."""
    if name in sys.modules:
        return False
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return False
    loader = spec.loader
    module = importlib.util.module_from_spec(spec)
    lock = threading.RLock()
    running = [False]

    def hook(attr: str) -> Any:
        """Run the package's init once, whichever thread asks first (the others wait for it),
        then look again; asked from inside the init, answer as a module being imported does."""
        with lock:
            if not running[0] and module.__dict__.get(_HOOK) is hook:
                running[0] = True
                try:
                    loader.exec_module(module)
                finally:
                    running[0] = False
                if module.__dict__.get(_HOOK) is hook:  # unless the init set its own
                    del module.__dict__[_HOOK]
                return getattr(module, attr)
            if not running[0]:  # another thread ran the init while this one waited
                return getattr(module, attr)
        try:
            return module.__dict__[attr]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None

    module.__dict__[_HOOK] = hook
    sys.modules[name] = module
    return True
