"""A content-addressed, on-disk cache of judge model answers.

The key is ``sha256(model id, prompt hash, model settings, rendered user message)``. The
rendered message contains every input of the question, and the prompt hash covers the
instructions, template and output schema, so:

* re-judging unchanged inputs with the same model and prompt finds the entry and makes no call;
* a new prompt version or another model gives other keys: exactly the entries of that prompt
  (or model) stop matching, the others still hit.

Only successful structured outputs are stored; an error or timeout is retried next time. Entries
live in one SQLite file (``judge_cache.sqlite3``) under a directory you choose.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from datagouv_eval_pipeline.core.judges.text import sha256_hex

CACHE_FILE = "judge_cache.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    model_id TEXT NOT NULL,
    prompt_id TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    output_json TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    created_at TEXT NOT NULL
)
"""


def cache_key(model_id: str, prompt_hash: str, settings_json: str, message: str) -> str:
    """The content address of one judge question."""
    return sha256_hex("judge-cache-v1", model_id, prompt_hash, settings_json, message)


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """A stored model answer.

    Attributes:
        output_json: The structured output, as JSON.
        input_tokens: Tokens the original call spent (not spent again on a hit).
        output_tokens: Output tokens of the original call.
    """

    output_json: str
    input_tokens: int
    output_tokens: int


class JudgeCache:
    """The SQLite-backed answer cache (safe to share between threads of one process).

    Args:
        directory: Where ``judge_cache.sqlite3`` lives (created when missing).
    """

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / CACHE_FILE
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> CachedAnswer | None:
        """The stored answer for a key, or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT output_json, input_tokens, output_tokens FROM answers WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return CachedAnswer(row[0], int(row[1]), int(row[2]))

    def put(
        self,
        key: str,
        *,
        model_id: str,
        prompt_id: str,
        prompt_hash: str,
        output_json: str,
        input_tokens: int,
        output_tokens: int,
    ) -> None:
        """Store a successful answer (an existing entry is replaced)."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    model_id,
                    prompt_id,
                    prompt_hash,
                    output_json,
                    input_tokens,
                    output_tokens,
                    datetime.now(UTC).isoformat(),
                ),
            )

    def count(self, *, prompt_hash: str | None = None, model_id: str | None = None) -> int:
        """Number of entries, optionally for one prompt hash and/or model."""
        query = "SELECT COUNT(*) FROM answers WHERE 1 = 1"
        params: list[str] = []
        if prompt_hash is not None:
            query += " AND prompt_hash = ?"
            params.append(prompt_hash)
        if model_id is not None:
            query += " AND model_id = ?"
            params.append(model_id)
        with self._lock:
            return int(self._db.execute(query, params).fetchone()[0])

    def prune(self, keep_prompt_hashes: set[str]) -> int:
        """Delete entries whose prompt hash is not kept (stale prompts); returns how many."""
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT prompt_hash FROM answers").fetchall()
            stale = [row[0] for row in rows if row[0] not in keep_prompt_hashes]
            deleted = 0
            for prompt_hash in stale:
                cursor = self._db.execute(
                    "DELETE FROM answers WHERE prompt_hash = ?", (prompt_hash,)
                )
                deleted += cursor.rowcount
        return deleted

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
