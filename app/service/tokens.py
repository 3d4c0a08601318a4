"""Callback tokens: 256-bit HMACs bound to one run and one suspension, stored hashed.

Deriving the token (instead of storing it) lets any process show the callback URL while
the database holds only its hash. A token stops working when the run leaves
`requires_action`, because the stored hash is cleared then.

Lease tokens of the tool-call queue carry a signature under the same key, so that a token
this service never issued is told apart from one that was issued and lost (the store keeps
only the current lease's random part).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets


def new_key() -> str:
    return secrets.token_urlsafe(32)


def callback_token(key: str, run_id: str, round: int) -> str:
    mac = hmac.new(key.encode(), f"{run_id}:{round}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def lease_signature(
    key: str, queue: str, run_id: str, round: int, position: int, nonce: str
) -> str:
    """128 bits binding a lease's random part to its queue and call (hex)."""
    message = f"lease:{queue}:{run_id}:{round}:{position}:{nonce}".encode()
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()[:32]
