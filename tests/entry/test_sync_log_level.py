"""The scheduled sync's summary line: INFO when something changed or failed, DEBUG when nothing did.

`mnemo serve` runs the scheduled sync every minute; at the default level (INFO) a
quiet round writes nothing to the foreground log.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from knowledge_helpers import doc, push_tree
from mnemo.entry.sync_events import sync_all
from mnemo.observability import logger
from mnemo.runtime import Services

TENANT = "acme"


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def summaries(self) -> list[str]:
        """The level of each 'scheduled sync' line since the last call."""
        levels = [record.levelname for record in self.records if record.getMessage() == "scheduled sync"]
        self.records.clear()
        return levels


@pytest.fixture
def lines() -> Iterator[Lines]:
    """Every record of the mnemo logger, DEBUG included (the level is put back afterwards)."""
    captured = Lines()
    level = logger.log_level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(captured)
    yield captured
    logger.removeHandler(captured)
    logger.setLevel(level)


def _push(services: Services, path: str, content: bytes) -> None:
    services.repository.push(TENANT, path, content, author="tester", message="edit")


def test_a_round_that_changes_nothing_logs_at_debug(services: Services, lines: Lines) -> None:
    push_tree(services, TENANT)
    sync_all()
    assert lines.summaries() == ["INFO"]  # the first round adds every file

    sync_all()
    sync_all()
    assert lines.summaries() == ["DEBUG", "DEBUG"]


def test_added_updated_and_deleted_files_log_at_info(services: Services, lines: Lines) -> None:
    push_tree(services, TENANT)
    sync_all()
    lines.summaries()

    _push(services, "company/policy-new-rule.md", doc("new-rule"))
    sync_all()
    _push(services, "company/policy-new-rule.md", doc("new-rule", summary="A stricter rule."))
    sync_all()
    services.repository.remove(TENANT, "company/policy-new-rule.md")
    sync_all()
    assert lines.summaries() == ["INFO", "INFO", "INFO"]


def test_a_file_that_fails_logs_at_info_every_round(services: Services, lines: Lines) -> None:
    push_tree(services, TENANT)
    sync_all()
    lines.summaries()

    _push(services, "company/policy-broken.md", b"---\nid: broken\n---\nno type, no title\n")
    sync_all()
    sync_all()  # still failing: said again, since a failure is never routine
    assert lines.summaries() == ["INFO", "INFO"]


def test_at_the_default_level_a_quiet_round_writes_nothing(services: Services) -> None:
    captured = Lines()
    logger.addHandler(captured)
    try:
        push_tree(services, TENANT)
        sync_all()
        captured.records.clear()
        sync_all()
    finally:
        logger.removeHandler(captured)
    assert logger.log_level == logging.INFO
    assert captured.summaries() == []
