"""Tool-call id minting (upstream `rig-core/src/id.rs`): 21 characters of `_-0-9a-zA-Z`."""

from __future__ import annotations

import secrets
from collections.abc import Callable

ALPHABET = "_-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
ID_LENGTH = 21

#: A source of randomness: given n, return n random bytes.
RandomBytes = Callable[[int], bytes]


def mint_id(random_bytes: RandomBytes = secrets.token_bytes) -> str:
    """A fresh 21-character id; the alphabet has 64 symbols, so one byte maps to one symbol."""
    return "".join(ALPHABET[b & 63] for b in random_bytes(ID_LENGTH))
