"""Stop signals held while a container is created or removed (sandbox/orphans.py)."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from sharedtask.sandbox.orphans import signals_held


def _send(sig: signal.Signals) -> None:
    signal.raise_signal(sig)  # Python runs the handler at the next bytecode


def test_a_signal_in_the_block_reaches_the_old_handler_after_it():
    seen: list[str] = []

    def handler(signum: int, frame: object) -> None:
        seen.append(f"handler {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        with signals_held():
            _send(signal.SIGTERM)
            for _ in range(1000):  # give the interpreter many chances to run a handler
                pass
            seen.append("block done")
        assert seen == ["block done", "handler SIGTERM"]
        assert signal.getsignal(signal.SIGTERM) is handler  # put back
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_ctrl_c_in_the_block_is_a_keyboard_interrupt_after_it():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with signals_held():
            _send(signal.SIGINT)
            done.append("x")
    assert done == ["x"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_only_the_first_of_several_signals_is_delivered_and_ignored_ones_stay_ignored():
    seen: list[int] = []
    prev_term = signal.signal(signal.SIGTERM, lambda s, f: seen.append(s))
    prev_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with signals_held():
            _send(signal.SIGHUP)
            _send(signal.SIGTERM)
        assert seen == []  # SIGHUP came first and was ignored before: still ignored
        with signals_held():
            _send(signal.SIGTERM)
            _send(signal.SIGHUP)
        assert seen == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, prev_term)
        signal.signal(signal.SIGHUP, prev_hup)


def test_no_signal_means_nothing_happens_and_errors_pass_through():
    with pytest.raises(ValueError, match="inner"):
        with signals_held():
            raise ValueError("inner")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_other_threads_run_the_block_without_touching_handlers():
    errors: list[BaseException] = []
    ran: list[bool] = []

    def body() -> None:
        try:
            with signals_held():
                ran.append(signal.getsignal(signal.SIGINT) is signal.default_int_handler)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert errors == [] and ran == [True]
