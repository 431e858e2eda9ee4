"""Optimistic concurrency on DynamoDB: an item is written only if it is still as it was read."""

from __future__ import annotations

from typing import Any


def unchanged_since_read(key_attribute: str, attribute: str, read: Any) -> dict[str, Any]:
    """`put_item`'s condition: `attribute` still holds `read`; with nothing read (None), there is no item."""
    if read is None:
        return {"ConditionExpression": f"attribute_not_exists({key_attribute})"}
    return {"ConditionExpression": f"{attribute} = :read", "ExpressionAttributeValues": {":read": read}}
