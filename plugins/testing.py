"""Deprecated old name of the contract kit, :mod:`powercontext.testing`; kept for one release.

``from powercontext.plugins.testing import MemoryBackendContract, InMemoryBackend, ...``
(what the documentation showed third-party backends before the kit became a package of
its own) and ``powercontext.plugins.testing.<module>`` give the kit's own objects, with
a :class:`DeprecationWarning` naming the new import.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings

import powercontext.testing as _kit
from powercontext.testing import *  # noqa: F403  (the kit's public names, as before)
from powercontext.testing import __all__  # noqa: F401

warnings.warn("powercontext.plugins.testing is deprecated: import powercontext.testing "
              "(the same contract kit)", DeprecationWarning, stacklevel=2)

# the kit's modules under their old names too (``...plugins.testing.strategies``): the
# same module objects, so a class imported either way is the same class
for _info in pkgutil.iter_modules(_kit.__path__):
    sys.modules[f"{__name__}.{_info.name}"] = importlib.import_module(
        f"{_kit.__name__}.{_info.name}")
