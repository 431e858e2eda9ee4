"""The embedded runtime's fast DynamoDB answers parse, in boto3, to exactly what moto's serializer gives."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from functions.local_runtime import dynamodb_json

TABLE = "items"
ITEM: dict[str, Any] = {
    "pk": {"S": "job#1"},
    "sk": {"N": "1"},
    "text": {"S": 'naïve — ünïcode "quoted"\n'},
    "count": {"N": "12.50"},
    "blob": {"B": b"\x00\xffbinary"},
    "flag": {"BOOL": True},
    "nothing": {"NULL": True},
    "list": {"L": [{"S": "a"}, {"N": "2"}, {"M": {"deep": {"B": b"\x01"}}}]},
    "map": {"M": {"inner": {"L": [{"BOOL": False}]}, "empty": {"M": {}}}},
    "strings": {"SS": ["x", "y"]},
    "numbers": {"NS": ["1", "2.5"]},
    "blobs": {"BS": [b"\x02", b"\x03"]},
}


def _exchange(client: Any) -> list[Any]:
    """One of each item operation, and a failed conditional write; their parsed answers."""
    answers: list[Any] = []

    def record(call: Any, **kwargs: Any) -> None:
        try:
            answer = call(**kwargs)
            answer.pop("ResponseMetadata", None)
            answers.append(answer)
        except ClientError as exc:
            answers.append(("error", exc.response["Error"]["Code"]))

    key = {"pk": ITEM["pk"], "sk": ITEM["sk"]}
    record(client.put_item, TableName=TABLE, Item=ITEM)
    record(client.put_item, TableName=TABLE, Item={**ITEM, "flag": {"BOOL": False}}, ReturnValues="ALL_OLD")
    for number in range(2, 6):
        record(client.put_item, TableName=TABLE, Item={**ITEM, "sk": {"N": str(number)}})
    record(client.get_item, TableName=TABLE, Key=key, ConsistentRead=True)
    record(client.get_item, TableName=TABLE, Key={"pk": {"S": "none"}, "sk": {"N": "0"}})
    record(
        client.get_item,
        TableName=TABLE,
        Key=key,
        ProjectionExpression="#t, map.inner",
        ExpressionAttributeNames={"#t": "text"},
    )
    record(
        client.update_item,
        TableName=TABLE,
        Key=key,
        UpdateExpression="SET #c = #c + :one, #l = list_append(#l, :more)",
        ExpressionAttributeNames={"#c": "count", "#l": "list"},
        ExpressionAttributeValues={":one": {"N": "1"}, ":more": {"L": [{"S": "z"}]}},
        ReturnValues="ALL_NEW",
    )
    record(
        client.update_item,
        TableName=TABLE,
        Key=key,
        UpdateExpression="SET flag = :f",
        ExpressionAttributeValues={":f": {"BOOL": True}},
        ReturnValues="UPDATED_OLD",
    )
    record(
        client.update_item,
        TableName=TABLE,
        Key=key,
        UpdateExpression="SET flag = :f",
        ConditionExpression="attribute_not_exists(pk)",
        ExpressionAttributeValues={":f": {"BOOL": True}},
    )
    record(
        client.query,
        TableName=TABLE,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": ITEM["pk"]},
        Limit=2,
    )
    record(
        client.query,
        TableName=TABLE,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "none"}},
    )
    record(client.scan, TableName=TABLE, Limit=3)
    record(client.batch_get_item, RequestItems={TABLE: {"Keys": [key, {"pk": ITEM["pk"], "sk": {"N": "3"}}]}})
    record(
        client.batch_write_item,
        RequestItems={TABLE: [{"DeleteRequest": {"Key": {"pk": ITEM["pk"], "sk": {"N": "5"}}}}]},
    )
    record(client.transact_get_items, TransactItems=[{"Get": {"TableName": TABLE, "Key": key}}])
    record(
        client.transact_write_items,
        TransactItems=[{"Put": {"TableName": TABLE, "Item": {**ITEM, "sk": {"N": "9"}}}}],
    )
    record(
        client.transact_write_items,
        TransactItems=[
            {
                "ConditionCheck": {
                    "TableName": TABLE,
                    "Key": key,
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
        ],
    )
    record(client.delete_item, TableName=TABLE, Key=key, ReturnValues="ALL_OLD")
    record(client.describe_table, TableName=TABLE)
    return answers


def _answers(fast: bool) -> tuple[list[Any], int]:
    dumped = 0
    wire_body = dynamodb_json.wire_body

    def counted(result: object) -> str | None:
        nonlocal dumped
        body = wire_body(result)
        dumped += body is not None
        return body

    with mock_aws(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(dynamodb_json, "wire_body", counted)
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName=TABLE,
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        if fast:
            dynamodb_json.install()
        try:
            answers = _exchange(client)
        finally:
            dynamodb_json.uninstall()
    # the table's creation time differs between the two accounts, and only there
    for answer in answers:
        if isinstance(answer, dict) and "Table" in answer:
            answer["Table"].pop("CreationDateTime", None)
    return answers, dumped


@pytest.fixture(scope="module")
def both() -> Iterator[tuple[list[Any], list[Any]]]:
    (reference, untouched), (fast, dumped) = _answers(fast=False), _answers(fast=True)
    # every successful item operation took the fast path (the two failed writes and DescribeTable did not)
    assert (untouched, dumped) == (0, 19)
    yield reference, fast


def test_every_item_operation_parses_to_what_the_serializer_gives(both: tuple[list[Any], list[Any]]) -> None:
    reference, fast = both
    assert len(reference) == len(fast) == 22
    for number, (expected, got) in enumerate(zip(reference, fast, strict=True)):
        assert got == expected, f"answer {number} differs"


def test_the_answers_cover_binary_values_paging_and_failed_conditions(
    both: tuple[list[Any], list[Any]],
) -> None:
    _, fast = both
    got_item = fast[6]["Item"]
    assert got_item["blob"] == {"B": b"\x00\xffbinary"} and got_item["blobs"] == {"BS": [b"\x02", b"\x03"]}
    assert got_item["list"]["L"][2] == {"M": {"deep": {"B": b"\x01"}}}
    assert fast[9]["Attributes"]["count"] == {"N": "13.50"} and fast[9]["Attributes"]["list"]["L"][-1] == {
        "S": "z"
    }
    assert fast[7] == {}  # an unknown key: no Item
    assert "LastEvaluatedKey" in fast[12] and fast[12]["Count"] == 2
    assert fast[11] == ("error", "ConditionalCheckFailedException")
    assert fast[19] == ("error", "TransactionCanceledException")


def test_a_result_that_is_not_dynamodb_json_goes_to_the_serializer() -> None:
    from datetime import UTC, datetime

    assert dynamodb_json.wire_body({"Table": {"CreationDateTime": datetime.now(UTC)}}) is None
    assert (
        dynamodb_json.wire_body({"Item": {"b": {"B": b"\x00"}}, "Gone": None})
        == '{"Item": {"b": {"B": "AA=="}}}'
    )
    assert dynamodb_json.wire_body([Decimal(1)]) is None
