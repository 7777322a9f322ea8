"""A pyiceberg FileIO over boto3 (and local files): what the maintenance Lambda reads the
lake's Iceberg metadata and manifests with.

pyiceberg's own FileIOs need pyarrow or s3fs; pyarrow alone is half of a Lambda's size
limit, and boto3 comes with the runtime. S3 reads go through the function's boto3 default
session, so they are signed with its role (and, locally, checked per call like AWS would).
`file://` and plain paths are read from disk (the local stack's Spark job writes a
`file://` warehouse). Writing is supported too: tests build S3 tables with it.
Selected by the pyiceberg property `py-io-impl` (PROPERTIES).
"""

from __future__ import annotations

import io
import os
from typing import Any
from urllib.parse import unquote, urlsplit

from pyiceberg.io import FileIO, InputFile, InputStream, OutputFile, OutputStream

PROPERTIES = {"py-io-impl": "lambdas.maintenance.fileio.Boto3FileIO"}
_S3_SCHEMES = ("s3", "s3a", "s3n")


def _split(location: str) -> tuple[str | None, str]:
    """(bucket, key) of an S3 location; (None, path) of a local one."""
    parts = urlsplit(location)
    if parts.scheme in _S3_SCHEMES:
        return parts.netloc, parts.path.lstrip("/")
    if parts.scheme in ("file", ""):
        return None, unquote(parts.path) if parts.scheme else location
    raise ValueError(f"unsupported location {location!r}: expected s3:// or file://")


def _s3() -> Any:
    from ingestion import aws

    return aws.client("s3")


def _missing(exc: Exception) -> bool:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code")
    return code in ("404", "NoSuchKey", "NotFound")


class _Input(InputFile):
    def __init__(self, location: str) -> None:
        super().__init__(location)
        self._bucket, self._key = _split(location)
        self._size: int | None = None

    def __len__(self) -> int:
        if self._size is None:
            if self._bucket is None:
                self._size = os.path.getsize(self._key)
            else:
                self._size = int(
                    _s3().head_object(Bucket=self._bucket, Key=self._key)["ContentLength"]
                )
        return self._size

    def exists(self) -> bool:
        if self._bucket is None:
            return os.path.exists(self._key)
        from botocore.exceptions import ClientError

        try:
            len(self)
        except ClientError as exc:
            if _missing(exc):
                return False
            raise
        return True

    def open(self, seekable: bool = True) -> InputStream:
        """The whole object in memory: metadata JSON and manifests are small."""
        if self._bucket is None:
            return open(self._key, "rb")
        from botocore.exceptions import ClientError

        try:
            body = _s3().get_object(Bucket=self._bucket, Key=self._key)["Body"].read()
        except ClientError as exc:
            if _missing(exc):  # pyiceberg's readers, and gc.py, expect this for a gone file
                raise FileNotFoundError(self.location) from exc
            raise
        self._size = len(body)
        return io.BytesIO(body)


class _S3Writer(io.BytesIO):
    """Buffers what is written; puts it as one object on close."""

    def __init__(self, bucket: str, key: str) -> None:
        super().__init__()
        self._bucket, self._key = bucket, key

    def close(self) -> None:
        if not self.closed:
            _s3().put_object(Bucket=self._bucket, Key=self._key, Body=self.getvalue())
        super().close()


class _Output(OutputFile):
    def __init__(self, location: str) -> None:
        super().__init__(location)
        self._bucket, self._key = _split(location)

    def __len__(self) -> int:
        return len(self.to_input_file())

    def exists(self) -> bool:
        return self.to_input_file().exists()

    def to_input_file(self) -> InputFile:
        return _Input(self.location)

    def create(self, overwrite: bool = False) -> OutputStream:
        if not overwrite and self.exists():
            raise FileExistsError(self.location)
        if self._bucket is None:
            os.makedirs(os.path.dirname(self._key) or ".", exist_ok=True)
            return open(self._key, "wb")
        return _S3Writer(self._bucket, self._key)


class Boto3FileIO(FileIO):
    """pyiceberg's FileIO over boto3 for `s3://` (`s3a`, `s3n`) and the local disk."""

    def new_input(self, location: str) -> InputFile:
        return _Input(location)

    def new_output(self, location: str) -> OutputFile:
        return _Output(location)

    def delete(self, location: str | InputFile | OutputFile) -> None:
        where = location if isinstance(location, str) else location.location
        bucket, key = _split(where)
        if bucket is None:
            os.remove(key)
        else:
            _s3().delete_object(Bucket=bucket, Key=key)
