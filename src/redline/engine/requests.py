"""Every request the engine takes, as one type (for annotations: nothing is imported)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TypeAlias

    from redline.engine.edit import EditRequest
    from redline.engine.patch import PatchRequest
    from redline.engine.read import ReadRequest
    from redline.engine.write import DeleteRequest, WriteRequest

    Request: TypeAlias = EditRequest | PatchRequest | WriteRequest | DeleteRequest | ReadRequest
