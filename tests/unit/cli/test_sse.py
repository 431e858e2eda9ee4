"""The SSE reader on byte chunks cut anywhere: inside a field, a CRLF pair, a UTF-8 character, a blank line."""

from __future__ import annotations

import itertools

from functions.cli.sse import ServerSentEvent, SseBuffer, iter_sse, parse_sse

STREAM = (
    b": keep-alive comment\n\n"
    b'event: trace_event\ndata: {"agent": "Planner", "name": "plan_created"}\n\n'
    b'event: answer_delta\r\ndata: {"text": "M\xc3\xbcller et al. report \xe2\x80\x94 12 %"}\r\n\r\n'
    b"event: answer_delta\rdata:no space after the colon\r\r"
    b"data: first line\ndata: second line\nid: 7\nretry: 1000\n\n"
    b"event: named but without data\n\n"
    b'event: final\ndata: {"refusal": false}\n\n'
)
EXPECTED = [
    ServerSentEvent("trace_event", '{"agent": "Planner", "name": "plan_created"}'),
    ServerSentEvent("answer_delta", '{"text": "Müller et al. report — 12 %"}'),
    ServerSentEvent("answer_delta", "no space after the colon"),
    ServerSentEvent("message", "first line\nsecond line"),
    ServerSentEvent("final", '{"refusal": false}'),
]


def _parse(chunks: list[bytes]) -> list[ServerSentEvent]:
    return list(iter_sse(chunks))


def test_one_chunk_gives_every_event_with_its_name_and_data() -> None:
    events = _parse([STREAM])
    assert events == EXPECTED
    assert events[1].json() == {"text": "Müller et al. report — 12 %"}


def test_every_split_into_two_and_three_chunks_gives_the_same_events() -> None:
    for cut in range(len(STREAM) + 1):
        assert _parse([STREAM[:cut], STREAM[cut:]]) == EXPECTED, cut
    for first, second in itertools.combinations(range(0, len(STREAM) + 1, 3), 2):
        chunks = [STREAM[:first], STREAM[first:second], STREAM[second:]]
        assert _parse(chunks) == EXPECTED, (first, second)


def test_byte_by_byte_gives_the_same_events() -> None:
    assert _parse([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED


def test_a_prefix_never_yields_an_event_that_is_not_final() -> None:
    for cut in range(len(STREAM) + 1):
        events, _ = parse_sse(SseBuffer(), STREAM[:cut])
        assert events == EXPECTED[: len(events)], cut


def test_an_event_is_emitted_by_the_chunk_that_ends_its_blank_line() -> None:
    events, buffer = parse_sse(SseBuffer(), b'event: answer_delta\ndata: {"text": "Sparse"}\n')
    assert events == []
    events, buffer = parse_sse(buffer, b"\nevent: final\nda")
    assert events == [ServerSentEvent("answer_delta", '{"text": "Sparse"}')]
    events, buffer = parse_sse(buffer, b"ta: {}\n\n")
    assert events == [ServerSentEvent("final", "{}")] and buffer == SseBuffer()


def test_crlf_split_between_cr_and_lf_is_one_line_ending_and_dispatches_at_once() -> None:
    events, buffer = parse_sse(SseBuffer(), b"data: a\r\n\r")
    assert events == [ServerSentEvent("message", "a")] and buffer.after_cr
    # the "\n" that completes the CRLF must not count as one more (blank) line
    events, buffer = parse_sse(buffer, b"\ndata: b\r")
    assert events == [] and buffer.after_cr
    events, buffer = parse_sse(buffer, b"\n\r\n")
    assert events == [ServerSentEvent("message", "b")] and not buffer.after_cr


def test_an_unterminated_last_event_is_dropped() -> None:
    assert _parse([b"data: complete\n\n", b"event: final\ndata: {}\n"]) == [
        ServerSentEvent("message", "complete")
    ]


def test_an_empty_data_field_is_an_event_with_empty_data() -> None:
    assert _parse([b"event: ping\ndata\n\n"]) == [ServerSentEvent("ping", "")]
