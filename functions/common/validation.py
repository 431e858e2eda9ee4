"""Request-field types shared by every API's request models."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, StrictInt


def integral_number(value: object) -> object:
    """JSON has one number type: 5.0 is the integer 5 (as JSON Schema says), "5" and true stay errors."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# an integer request field under strict validation (strings and booleans are errors, 5.0 is 5)
JsonInt = Annotated[int, BeforeValidator(integral_number)]
# the same where the model itself is not strict
JsonStrictInt = Annotated[StrictInt, BeforeValidator(integral_number)]
