"""Benchmark: start-up of the embedded runtime with a kept state (functions/local_runtime/durable.py).

    .venv/bin/python -m bench.durable_state [--objects 1000] [--object-kb 32] [--rounds 3]

Fills a state directory through the runtime's own write path (boto3 into moto, journaled): `--objects`
S3 objects of `--object-kb` KB each (a parsed paper's size) plus one DynamoDB item per object (its
document record, written then updated, so the journal holds two lines per item before compaction) and
10 schedules. Then starts `EmbeddedAws` on that directory `--rounds` times and prints, per start, the time
to load the state (journal read, moto filled, journal rewritten compacted) and the whole start, beside
the whole start of an in-memory runtime (no state dir) measured in the same run; and the cost of
journaling per write (PutItem and PutObject, kept vs in memory).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import boto3

from functions.common.settings import get_settings
from functions.local_runtime.aws import EmbeddedAws


def _fill(state_dir: Path | None, objects: int, object_kb: int) -> tuple[float, float]:
    """Write the data set; mean seconds per PutItem and per PutObject."""
    body = (b"parsed paper text " * (object_kb * 64))[: object_kb * 1024]
    with EmbeddedAws(state_dir=state_dir):
        settings = get_settings()
        table = boto3.resource("dynamodb", region_name="us-east-1").Table(settings.documents_table)
        s3 = boto3.client("s3", region_name="us-east-1")
        put_item = put_object = 0.0
        for number in range(objects):
            key = {"team_id": "team-bench", "document_id": f"doc-{number:06d}"}
            started = time.perf_counter()
            table.put_item(Item={**key, "status": "PARSING", "filename": f"paper-{number}.pdf"})
            put_item += time.perf_counter() - started
            table.update_item(
                Key=key,
                UpdateExpression="SET #s = :s",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":s": "READY"},
            )
            started = time.perf_counter()
            s3.put_object(
                Bucket=settings.data_bucket,
                Key=f"parsed/{number:06d}.json",
                Body=f"{number:06d}".encode() + body[6:],  # distinct bodies: one blob file each
                ContentType="application/json",
            )
            put_object += time.perf_counter() - started
        scheduler = boto3.client("scheduler", region_name="us-east-1")
        for number in range(10):
            scheduler.create_schedule(
                Name=f"bench-{number}",
                ScheduleExpression="rate(1 day)",
                FlexibleTimeWindow={"Mode": "OFF"},
                Target={
                    "Arn": "arn:aws:states:us-east-1:123456789012:stateMachine:research",
                    "RoleArn": "arn:aws:iam::123456789012:role/bench",
                    "Input": json.dumps({"research_goal": f"bench {number}"}),
                },
            )
    return put_item / objects, put_object / objects


def _start(state_dir: Path | None) -> tuple[float, float, dict[str, int]]:
    """Seconds of the whole start, of loading the state in it, and what was loaded."""
    started = time.perf_counter()
    aws = EmbeddedAws(state_dir=state_dir)
    aws.start()
    total = time.perf_counter() - started
    loaded, restored = aws.restore_seconds, dict(aws.restored)
    aws.stop()
    return total, loaded, restored


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--object-kb", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="durable-bench-") as temporary:
        state_dir = Path(temporary) / "state"
        kept_item, kept_object = _fill(state_dir, args.objects, args.object_kb)
        memory_item, memory_object = _fill(None, args.objects, args.object_kb)
        journal = state_dir / "journal.jsonl"
        before = journal.stat().st_size
        blobs = sum(path.stat().st_size for path in (state_dir / "blobs").iterdir())
        print(
            f"state: {args.objects} S3 objects of {args.object_kb} KB + {args.objects} DynamoDB items + 10 schedules; "
            f"journal {before / 1e6:.1f} MB before compaction, blobs {blobs / 1e6:.1f} MB"
        )
        memory_starts, kept_starts, loads = [], [], []
        restored: dict[str, int] = {}
        for _ in range(args.rounds):
            memory_starts.append(_start(None)[0])
            total, loaded, restored = _start(state_dir)
            kept_starts.append(total)
            loads.append(loaded)
        print(
            f"restored per start: {restored}; journal after compaction {journal.stat().st_size / 1e6:.1f} MB"
        )
        median_memory, median_kept = statistics.median(memory_starts), statistics.median(kept_starts)
        print(
            f"start-up, in memory (no state):      median {median_memory:.2f} s "
            f"(runs: {', '.join(f'{value:.2f}' for value in memory_starts)})"
        )
        print(
            f"start-up, with {args.objects} stored objects: median {median_kept:.2f} s "
            f"(runs: {', '.join(f'{value:.2f}' for value in kept_starts)}); "
            f"of which loading the state {statistics.median(loads):.2f} s"
        )
        print(
            f"per write: PutItem {kept_item * 1e3:.2f} ms kept vs {memory_item * 1e3:.2f} ms in memory; "
            f"PutObject ({args.object_kb} KB) {kept_object * 1e3:.2f} ms kept vs {memory_object * 1e3:.2f} ms"
        )


if __name__ == "__main__":
    main()
