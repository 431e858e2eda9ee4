"""Serialises moto's S3 object requests, as S3 itself keeps each object request consistent.

Two extraction requests for the same paper at once both store its parsed cache under one key. moto
replaces the key's object while the other thread still reads its buffer to compute the ETag, which
fails with "I/O operation on closed file" and answered 500 under load (bench/load.py found it). One lock
around every S3 object request (GET/PUT/HEAD/DELETE of a key) restores consistent answers. S3 requests
never call back into Lambda, so the lock cannot deadlock with the in-process handlers.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from moto.s3.responses import S3Response

from functions.local_runtime.patching import MethodPatch

_requests = threading.RLock()


def _atomic(key_response: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(key_response)
    def atomic_key_response(self: S3Response, *args: Any, **kwargs: Any) -> Any:
        with _requests:
            return key_response(self, *args, **kwargs)

    return atomic_key_response


_PATCH = MethodPatch(S3Response, "key_response", _atomic)
install = _PATCH.install
uninstall = _PATCH.uninstall
