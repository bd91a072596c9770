"""evaluate_async on asyncio: awaited on the running loop, cancellable."""

import asyncio
import threading

import pytest

import toolnexus as tn

QS = {"refund": tn.Noul("Does the customer ask for money back?")}


def test_evaluate_async_answers_as_evaluate_does(stub):
    judge = tn.create_classifier(base_url=stub.url)

    async def main():
        return await asyncio.gather(*(judge.evaluate_async(f"state {i}", QS) for i in range(20)))

    decisions = asyncio.run(main())
    assert decisions == [judge.evaluate(f"state {i}", QS) for i in range(20)]


def test_evaluate_async_raises_the_librarys_error(stub):
    stub.status = 429
    judge = tn.create_classifier(base_url=stub.url, retries=0)
    with pytest.raises(tn.ClassifierError) as e:
        asyncio.run(judge.evaluate_async("x", QS))
    assert e.value.status == 429 and e.value.is_retryable


def test_cancelling_the_task_cancels_the_call_without_waiting_for_it():
    release = threading.Event()
    finished = threading.Event()

    def slow(state, questions):
        # Holds its thread until the test releases it.
        release.wait(30)
        finished.set()
        return {"model": "m", "answers": {"refund": {"type": "noul", "noul": 0.5}}}

    judge = tn.create_classifier(style="custom", evaluate=slow)

    async def main():
        task = asyncio.ensure_future(judge.evaluate_async("x", QS))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The task is cancelled while the callable still runs.
        assert not finished.is_set()

    try:
        asyncio.run(main())
    finally:
        release.set()


def test_a_cancelled_stub_call_leaves_the_classifier_usable(stub):
    stub.delay_s = 0.5
    judge = tn.create_classifier(base_url=stub.url, retries=0)

    async def main():
        task = asyncio.ensure_future(judge.evaluate_async("slow", QS))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        stub.delay_s = 0
        return await judge.evaluate_async("fast", QS)

    assert asyncio.run(main()).model == "stub-1"
