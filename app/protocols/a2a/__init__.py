"""(being built)"""

from __future__ import annotations

from fastapi import FastAPI


def install(app: FastAPI) -> None:
    """Mount the protocol's routes on `app` (the composition root calls it)."""
