"""Where the tests' reference data lives: copies kept in the repository, so a clean clone and CI
need nothing outside it (provenance: tests/fixtures/ahp-0.7.0/README.md and provenance.json)."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CONFORMANCE = FIXTURES / "ahp-0.7.0"
AGENTAPI_SPEC = FIXTURES / "spec" / "agentapi.txt"
AHP_NOTES = FIXTURES / "notes" / "ahp-protocol.md"
OWN_REDUCERS = FIXTURES / "own-reducers"  # ours, in the upstream fixtures' shape (its README.md)
