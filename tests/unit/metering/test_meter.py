"""What a unit of work uses: the meter, metered LLM and full-text ports, counted boto3 calls."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from functions.common.aws import dynamodb_resource, s3_client
from functions.common.llm import Completion, CompletionStream, StreamEnd, Usage
from functions.common.models import ExtractedPaper
from functions.metering.aws_calls import instrument_clients
from functions.metering.meter import Meter, MeteredFullText, MeteredLlm, current_meter, metered_llm, metering
from tests.support.tables import create_table


class FakeLlm:
    name = "fake"
    model = "fake-1"

    async def complete(self, system: str, prompt: str, **_: Any) -> Completion:
        return Completion("ok", Usage(120, 30), self.model)

    def stream(self, system: str, prompt: str, **_: Any) -> CompletionStream:
        async def events() -> AsyncGenerator[str | StreamEnd, None]:
            yield "Hello "
            yield "world"
            yield StreamEnd(Usage(200, 40), self.model)

        return CompletionStream(events(), self.model)


def test_the_meter_is_found_where_the_work_runs() -> None:
    assert current_meter() is None
    meter = Meter()
    with metering(meter):
        assert current_meter() is meter

        async def in_a_task() -> Meter | None:
            return await asyncio.to_thread(current_meter)

        assert asyncio.run(in_a_task()) is meter
        seen: list[Meter | None] = []
        thread = threading.Thread(target=lambda: seen.append(current_meter()))
        thread.start()
        thread.join()
        assert seen == [None]  # a bare thread is outside the unit: nothing is counted there
    assert current_meter() is None


def test_llm_tokens_are_metered_for_complete_and_stream() -> None:
    provider = metered_llm(FakeLlm())
    assert isinstance(provider, MeteredLlm) and provider.name == "fake" and metered_llm(None) is None
    meter = Meter()

    async def use() -> str:
        await provider.complete("system", "prompt")
        stream = provider.stream("system", "prompt")
        async with stream:
            text = "".join([delta async for delta in stream])
        assert stream.usage == Usage(200, 40)
        return text

    with metering(meter):
        assert asyncio.run(use()) == "Hello world"
    assert (meter.llm_tokens_in, meter.llm_tokens_out) == (320, 70)


class FakeExtractor:
    def __init__(self) -> None:
        self.closed = False

    async def extract(self, source_url: str, **options: Any) -> ExtractedPaper:
        if "broken" in source_url:
            raise RuntimeError("unreachable")
        return ExtractedPaper(source_url=source_url, canonical_id=source_url, success="good" in source_url)

    async def aclose(self) -> None:
        self.closed = True


def test_sources_fetched_and_parsed_are_counted() -> None:
    inner = FakeExtractor()
    port = MeteredFullText(inner)
    meter = Meter()

    async def use() -> None:
        await port.extract("https://x/good", focus_areas=["a"], team_id="team-a")
        await port.extract("https://x/empty")
        with pytest.raises(RuntimeError):
            await port.extract("https://x/broken")
        await port.aclose()

    with metering(meter):
        asyncio.run(use())
    assert (meter.sources_fetched, meter.sources_parsed, meter.sources_failed) == (3, 1, 2)
    assert inner.closed


@mock_aws
def test_s3_and_dynamodb_calls_are_counted_inside_a_meter_only() -> None:
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="data")
    create_table("usage_table", "usage")
    instrument_clients()
    instrument_clients()  # idempotent: each call is counted once
    meter = Meter()
    with metering(meter):
        s3_client().put_object(Bucket="data", Key="a", Body=b"1")
        s3_client().get_object(Bucket="data", Key="a")
        table = dynamodb_resource().Table("usage")
        table.put_item(Item={"pk": "a", "sk": "b"})
        table.get_item(Key={"pk": "a", "sk": "b"})
    s3_client().get_object(Bucket="data", Key="a")  # outside: not counted
    assert sorted(meter.calls()) == [
        ("dynamodb", "GetItem", 1),
        ("dynamodb", "PutItem", 1),
        ("s3", "GetObject", 1),
        ("s3", "PutObject", 1),
    ]
