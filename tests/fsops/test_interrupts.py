"""When a signal raises, and when it waits for the request in hand to be answered."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest

from redline.fsops import interrupts
from redline.fsops.interrupts import Interrupted


@pytest.fixture(autouse=True)
def fresh_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in (
        ("_writing", 0),
        ("_patient", True),
        ("_settled", False),
        ("_pending", None),
    ):
        monkeypatch.setattr(interrupts, name, value)
    yield


def test_outside_a_write_a_signal_raises_at_once() -> None:
    with pytest.raises(Interrupted) as raised:
        interrupts.handle(signal.SIGTERM, None)
    assert raised.value.signum == signal.SIGTERM
    assert raised.value.exit_code == 143


def test_a_signal_during_a_write_waits_for_the_answer() -> None:
    with interrupts.writing():
        interrupts.handle(signal.SIGINT, None)  # waits
        interrupts.handle(signal.SIGTERM, None)  # the first one is what is reported
    assert interrupts.wrote()
    interrupts.handle(signal.SIGINT, None)  # written, not yet answered: still waits
    with pytest.raises(Interrupted) as raised:
        interrupts.answered()
    assert raised.value.exit_code == 130
    assert not interrupts.wrote()
    interrupts.answered()  # nothing waits any more


def test_a_second_signal_ends_an_impatient_wait() -> None:
    with interrupts.writing(patient=False):
        interrupts.handle(signal.SIGINT, None)
        with pytest.raises(Interrupted):
            interrupts.handle(signal.SIGINT, None)


def test_a_patient_write_inside_an_impatient_one_stays_patient_and_the_outer_is_restored() -> None:
    with interrupts.writing(patient=False):
        with interrupts.writing():
            interrupts.handle(signal.SIGINT, None)
            interrupts.handle(signal.SIGINT, None)  # waits: the inner write must finish
        with pytest.raises(Interrupted):
            interrupts.handle(signal.SIGINT, None)


def test_a_write_off_the_main_thread_marks_nothing() -> None:
    seen: list[bool] = []

    def work() -> None:
        with interrupts.writing():
            seen.append(interrupts.wrote())

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen == [False]
    assert not interrupts.wrote()
