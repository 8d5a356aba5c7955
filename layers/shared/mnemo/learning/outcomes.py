"""What extraction did, as types: a strategy's failure, its part of a run, a run, and a notice handled.

The pipeline and the service hand these to each other and read their fields; the wire shapes (a run's
record, RunView; a failure, StrategyFailure) and the worker's log word are derived from them at the edge
(``view``, ``str``), never parsed back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from mnemo.learning.consolidation import Candidate
from mnemo.learning.strategies import Strategy


class Retry(Enum):
    """What a strategy's failure means for the turns it was on."""

    #: An answer out of shape: one of the turns' ``MAX_ATTEMPTS`` runs is used up.
    COUNTED = "counted"
    #: The model did not answer (down, throttled): the turns wait however long the outage lasts.
    FREE = "free"
    #: The same every run (an id the turns were written without): shown once, and the turns let go for it.
    NEVER = "never"


class Failed(Exception):
    """A strategy failed for good in this run: the message, the model's raw answer, the attempts, the tokens
    the failed calls used, and what it means for the turns (``Retry``)."""

    def __init__(
        self,
        message: str,
        raw: str | None = None,
        attempts: int = 1,
        tokens: tuple[int, int] = (0, 0),
        *,
        retry: Retry = Retry.COUNTED,
    ):
        super().__init__(message)
        self.message, self.raw, self.attempts, self.tokens, self.retry = message, raw, attempts, tokens, retry

    def view(self) -> dict[str, Any]:
        """The failure as a run's record and the stream's ``lastFailure`` store it (StrategyFailure)."""
        return {"message": self.message, "raw": self.raw, "attempts": self.attempts}


class NoTarget(Failed):
    """The strategy's layer needs an id the turns were written without (an agent id for lessons): the same
    every run."""

    def __init__(self, layer: str, missing: str):
        super().__init__(
            f"the {layer} layer needs a {missing} id, and the turns were written without one", retry=Retry.NEVER
        )


@dataclass
class StrategyOutcome:
    """One strategy's part of a run: what it proposed and decided, or how it failed, and what it cost."""

    strategy: Strategy
    model: str
    candidates: list[Candidate] = field(default_factory=list)
    failure: Failed | None = None
    input_tokens: int = 0
    output_tokens: int = 0

    def add_tokens(self, tokens: tuple[int, int]) -> None:
        """Count the tokens of one more model call."""
        self.input_tokens += tokens[0]
        self.output_tokens += tokens[1]

    def view(self) -> dict[str, Any]:
        """The outcome as a run record stores it (the StrategyRun wire shape)."""
        return {
            "strategy": self.strategy.name,
            "model": self.model,
            "candidates": [
                {
                    "text": c.text,
                    "subject": c.subject,
                    "sourceIds": c.source_ids,
                    "occurredAt": c.occurred_at,
                    "decision": c.decision,
                    "memoryId": c.memory_id,
                    "supersedes": c.supersedes,
                    "reason": c.reason,
                }
                for c in self.candidates
            ],
            "failure": self.failure.view() if self.failure is not None else None,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
        }


@dataclass
class RunOutcome:
    """One extraction run over a batch of turns: the turns it read, each strategy's part, and the strategies
    left for the background run because the request's deadline was near."""

    run_id: str
    at: str
    trigger: str
    dry_run: bool
    session: str | None
    #: The message ids of the turns it read (those whose records are still there).
    turns: list[str]
    strategies: list[StrategyOutcome] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether every strategy that ran failed (none ran: not a failure)."""
        return bool(self.strategies) and all(outcome.failure is not None for outcome in self.strategies)

    def view(self) -> dict[str, Any]:
        """The run as its record stores it (the RunView wire shape)."""
        return {
            "runId": self.run_id,
            "at": self.at,
            "trigger": self.trigger,
            "dryRun": self.dry_run,
            "session": self.session,
            "turns": self.turns,
            "strategies": [outcome.view() for outcome in self.strategies],
            "deferred": self.deferred,
        }


class Left(Enum):
    """How a stream stands after a notice was handled."""

    #: Extraction is off: nothing was looked at.
    OFF = "off"
    #: No turn waits (any run made finished them).
    NOTHING = "nothing"
    #: Turns wait, but fewer than ``every_turns`` and not yet quiet for ``idle_minutes``: an idle wake-up is armed
    #: (unless the sweep, which looks again anyway, handled the notice).
    NOT_DUE = "not due"
    #: Every strategy of the last run failed: the turns wait, and a wake-up tries again.
    FAILED = "failed"
    #: ``MAX_RUNS_PER_WAKE`` runs were made and turns still wait: other streams get the worker first.
    MORE = "more"


@dataclass(frozen=True)
class NoticeOutcome:
    """What the extraction worker did with one notice: the runs it made, and how the stream was left."""

    runs: int
    left: Left

    def __str__(self) -> str:
        """The worker's word for it, as logged: ``off``, ``idle``, ``waiting``, ``ran 2``, ``ran 1, waiting``,
        ``ran 1, failed``, ``ran 20, more waiting``."""
        if self.left is Left.OFF:
            return "off"
        after = {Left.NOTHING: "", Left.NOT_DUE: "waiting", Left.FAILED: "failed", Left.MORE: "more waiting"}
        said = [f"ran {self.runs}"] if self.runs else []
        if after[self.left]:
            said.append(after[self.left])
        return ", ".join(said) or "idle"
