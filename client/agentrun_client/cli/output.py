"""Where a command writes (JSON or for a person), its exit statuses, and the shape of a
command and of the hook that adds one to the parser."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, TextIO

from pydantic import BaseModel

from agentrun_client import _render
from agentrun_client._sync import Client
from agentrun_client.models import Run

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_OTHER_STATUS, EXIT_TIMEOUT = 0, 1, 2, 3, 4


class Output:
    """Where a command writes, as JSON or for a person."""

    def __init__(self, as_json: bool, prog: str, stdout: TextIO, stderr: TextIO) -> None:
        self.json, self.prog, self.stdout, self.stderr = as_json, prog, stdout, stderr

    def doc(self, value: Any) -> None:
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", by_alias=True)
        print(json.dumps(value, ensure_ascii=False), file=self.stdout, flush=True)

    def text(self, text: str) -> None:
        print(text, file=self.stdout, flush=True)

    def run(self, run: Run) -> None:
        self.doc(run) if self.json else self.text(_render.run_text(run, self.prog))

    def note(self, text: str) -> None:
        print(text, file=self.stderr, flush=True)


Command = Callable[[Client, argparse.Namespace, Output], int]
#: Adds a command to its group (its name, what runs it, its help) and gives its parser back.
AddCommand = Callable[[str, Command, str], argparse.ArgumentParser]
