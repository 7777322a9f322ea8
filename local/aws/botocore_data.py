"""One copy of botocore's data files per process of the local stack.

Each function of the local stack has a boto3 session of its own (its own credentials), and
`mock_aws()` resets boto3's default session: each new session builds a new loader, which
parses the endpoint rules and each service's model (JSON files of megabytes) again. The
files do not change while a process runs, so every session shares one loader (botocore
caches what a loader has parsed). Measured on the suite's moto-backed tests: about 30% of
their CPU time went to parsing them again.
"""

from __future__ import annotations

import botocore.loaders
import botocore.session

_loaders: dict[str | None, botocore.loaders.Loader] = {}
_create_loader = botocore.loaders.create_loader


def _shared_loader(search_path_string: str | None = None) -> botocore.loaders.Loader:
    if search_path_string not in _loaders:
        _loaders[search_path_string] = _create_loader(search_path_string)
    return _loaders[search_path_string]


def share_botocore_data() -> None:
    """Make every botocore session of this process read data files through one loader."""
    botocore.session.create_loader = _shared_loader
