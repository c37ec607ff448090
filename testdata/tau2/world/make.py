"""Writes golden.jsonl: sessions of calls to τ²-bench's retail tools, each
answered by τ²-bench's own implementation over the database in ../db/.

hoist-mcp-demo --world tau2-retail must give the same answers, byte for
byte (internal/demo/tau2_test.go). Run it with the reference code of
τ²-bench beside the checkout and pydantic installed:

    python3 testdata/tau2/world/make.py ../shared/data/tau2/reference

It stubs the three τ²-bench modules the reference imports (the database
loader, the tool decorator, the database path) and answers each call as
τ²-bench's environment does: a record as json.dumps(model_dump()), a string
as it is, and an exception e as "Error: {e}" with error true.
"""

import json
import os
import sys
import types
from enum import Enum

from pydantic import BaseModel

here = os.path.dirname(os.path.abspath(__file__))
db_path = os.path.join(here, "..", "db", "retail.json")


class DB(BaseModel):
    @classmethod
    def load(cls, path):
        with open(path) as f:
            return cls.model_validate(json.load(f))


class ToolType(str, Enum):
    READ = "read"
    WRITE = "write"
    GENERIC = "generic"
    THINK = "think"


def is_tool(tool_type):
    return lambda f: f


class ToolKitBase:
    def __init__(self, db):
        self.db = db


def stub(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m


for name in ["tau2", "tau2.domains", "tau2.domains.retail", "tau2.environment"]:
    stub(name)
stub("tau2.environment.db", DB=DB)
stub("tau2.environment.toolkit", ToolKitBase=ToolKitBase, ToolType=ToolType, is_tool=is_tool)
stub("tau2.domains.retail.utils", RETAIL_DB_PATH=db_path)

sys.path.insert(0, sys.argv[1])
import retail_data_model  # noqa: E402

sys.modules["tau2.domains.retail.data_model"] = retail_data_model
import retail_tools  # noqa: E402


def answer(tools, name, args):
    try:
        resp = getattr(tools, name)(**args)
    except Exception as e:  # τ²-bench answers every exception as an error
        return "Error: " + str(e), True
    if isinstance(resp, BaseModel):
        return json.dumps(resp.model_dump()), False
    return resp, False


# Each session starts from the database as loaded.
sessions = {
    "reads": [
        ("find_user_id_by_email", {"email": "Noah.Brown7922@example.com"}),
        ("find_user_id_by_name_zip", {"first_name": "noah", "last_name": "BROWN", "zip": "80279"}),
        ("get_user_details", {"user_id": "noah_brown_6181"}),
        ("get_order_details", {"order_id": "#W3220387"}),
        ("get_product_details", {"product_id": "8600330539"}),
        ("get_item_details", {"item_id": "4900661478"}),
        ("list_all_product_types", {}),
        ("calculate", {"expression": "2 + 2"}),
        ("calculate", {"expression": "1166.98 - 481.5"}),
        ("calculate", {"expression": "(466.75+285.66) * 3 / 7"}),
        ("calculate", {"expression": "10 / 4"}),
        ("calculate", {"expression": "-3 // 2"}),
        ("calculate", {"expression": "2 ** 10 - -1"}),
        ("calculate", {"expression": "0.1 + 0.2"}),
        ("transfer_to_human_agents", {"summary": "The customer wants a person."}),
    ],
    "read errors": [
        ("find_user_id_by_email", {"email": "nobody@example.com"}),
        ("find_user_id_by_name_zip", {"first_name": "Noah", "last_name": "Brown", "zip": "00000"}),
        ("get_user_details", {"user_id": "noah_brown_0000"}),
        ("get_order_details", {"order_id": "W3220387"}),
        ("get_product_details", {"product_id": "4900661478"}),
        ("get_item_details", {"item_id": "8600330539"}),
        ("calculate", {"expression": "2 + x"}),
        ("calculate", {"expression": "1 +"}),
        ("calculate", {"expression": "1 / 0"}),
        ("calculate", {"expression": "1.5 / 0"}),
        ("calculate", {"expression": "(1 + 2"}),
        ("calculate", {"expression": "1 + 2)"}),
        ("calculate", {"expression": "2 3"}),
        ("calculate", {"expression": "1.2.3"}),
    ],
    "cancel a pending order paid by gift card": [
        ("get_user_details", {"user_id": "ethan_lopez_6291"}),
        ("cancel_pending_order", {"order_id": "#W6779827", "reason": "no longer needed"}),
        ("get_order_details", {"order_id": "#W6779827"}),
        ("get_user_details", {"user_id": "ethan_lopez_6291"}),
        ("cancel_pending_order", {"order_id": "#W6779827", "reason": "no longer needed"}),
    ],
    "cancel errors": [
        ("cancel_pending_order", {"order_id": "#W0000000", "reason": "no longer needed"}),
        ("cancel_pending_order", {"order_id": "#W2611340", "reason": "no longer needed"}),
        ("cancel_pending_order", {"order_id": "#W6779827", "reason": "found it cheaper"}),
        ("get_order_details", {"order_id": "#W6779827"}),
    ],
    "modify a pending order's address, then its payment": [
        ("modify_pending_order_address", {"order_id": "#W2443586", "address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX", "country": "USA", "zip": "78701"}),
        ("get_order_details", {"order_id": "#W2443586"}),
        ("modify_pending_order_payment", {"order_id": "#W2443586", "payment_method_id": "paypal_7859314"}),
        ("modify_pending_order_payment", {"order_id": "#W2443586", "payment_method_id": "gift_card_2742113"}),
        ("modify_pending_order_payment", {"order_id": "#W2443586", "payment_method_id": "credit_card_0000000"}),
        ("modify_pending_order_address", {"order_id": "#W3113816", "address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX", "country": "USA", "zip": "78701"}),
    ],
    "move a pending order from a gift card to a credit card": [
        ("modify_pending_order_payment", {"order_id": "#W6779827", "payment_method_id": "credit_card_9789590"}),
        ("get_user_details", {"user_id": "ethan_lopez_6291"}),
        ("modify_pending_order_payment", {"order_id": "#W6779827", "payment_method_id": "gift_card_7219486"}),
        ("modify_pending_order_address", {"order_id": "#W6779827", "address1": "2 Elm St", "address2": "Apt 3", "city": "Denver", "state": "CO", "country": "USA", "zip": "80202"}),
    ],
    "modify a pending order's items": [
        ("modify_pending_order_items", {"order_id": "#W6779827", "item_ids": ["3379843752"], "new_item_ids": ["3951031513"], "payment_method_id": "gift_card_7219486"}),
        ("modify_pending_order_items", {"order_id": "#W6779827", "item_ids": ["3379843752"], "new_item_ids": ["3379843752"], "payment_method_id": "gift_card_7219486"}),
        ("modify_pending_order_items", {"order_id": "#W6779827", "item_ids": ["3379843752", "7896397433"], "new_item_ids": ["3709608322"], "payment_method_id": "gift_card_7219486"}),
        ("modify_pending_order_items", {"order_id": "#W6779827", "item_ids": ["1111111111"], "new_item_ids": ["3709608322"], "payment_method_id": "gift_card_7219486"}),
        ("modify_pending_order_items", {"order_id": "#W6779827", "item_ids": ["3379843752"], "new_item_ids": ["4900661478"], "payment_method_id": "gift_card_7219486"}),
        ("modify_pending_order_items", {"order_id": "#W6779827", "item_ids": ["3379843752"], "new_item_ids": ["3709608322"], "payment_method_id": "gift_card_7219486"}),
        ("get_order_details", {"order_id": "#W6779827"}),
        ("get_user_details", {"user_id": "ethan_lopez_6291"}),
        ("modify_pending_order_items", {"order_id": "#W6779827", "item_ids": ["7896397433"], "new_item_ids": ["3709608322"], "payment_method_id": "gift_card_7219486"}),
        ("modify_pending_order_address", {"order_id": "#W6779827", "address1": "2 Elm St", "address2": "Apt 3", "city": "Denver", "state": "CO", "country": "USA", "zip": "80202"}),
        ("cancel_pending_order", {"order_id": "#W6779827", "reason": "ordered by mistake"}),
    ],
    "modify two items at once": [
        ("modify_pending_order_items", {"order_id": "#W6779827", "item_ids": ["3379843752", "1323134954"], "new_item_ids": ["3709608322", "3020722515"], "payment_method_id": "gift_card_7219486"}),
        ("get_user_details", {"user_id": "ethan_lopez_6291"}),
        ("get_order_details", {"order_id": "#W6779827"}),
    ],
    "return delivered items": [
        ("return_delivered_order_items", {"order_id": "#W9077205", "item_ids": ["9370300555"], "payment_method_id": "paypal_4101143"}),
        ("return_delivered_order_items", {"order_id": "#W9077205", "item_ids": ["9370300555", "9370300555"], "payment_method_id": "gift_card_7108145"}),
        ("return_delivered_order_items", {"order_id": "#W9077205", "item_ids": ["3877338112", "9370300555"], "payment_method_id": "gift_card_7108145"}),
        ("get_order_details", {"order_id": "#W9077205"}),
        ("return_delivered_order_items", {"order_id": "#W9077205", "item_ids": ["9370300555"], "payment_method_id": "gift_card_7108145"}),
        ("exchange_delivered_order_items", {"order_id": "#W9077205", "item_ids": ["9370300555"], "new_item_ids": ["9370300555"], "payment_method_id": "gift_card_7108145"}),
    ],
    "exchange delivered items": [
        ("exchange_delivered_order_items", {"order_id": "#W4817420", "item_ids": ["4900661478", "4900661478"], "new_item_ids": ["8479046075", "8479046075"], "payment_method_id": "gift_card_8168843"}),
        ("exchange_delivered_order_items", {"order_id": "#W4817420", "item_ids": ["4900661478"], "new_item_ids": [], "payment_method_id": "gift_card_8168843"}),
        ("exchange_delivered_order_items", {"order_id": "#W4817420", "item_ids": ["4900661478"], "new_item_ids": ["7373893106"], "payment_method_id": "gift_card_8168843"}),
        ("exchange_delivered_order_items", {"order_id": "#W4817420", "item_ids": ["4900661478"], "new_item_ids": ["1111111111"], "payment_method_id": "gift_card_8168843"}),
        ("exchange_delivered_order_items", {"order_id": "#W4817420", "item_ids": ["4900661478"], "new_item_ids": ["4894369688"], "payment_method_id": "gift_card_8168843"}),
        ("exchange_delivered_order_items", {"order_id": "#W4817420", "item_ids": ["4900661478"], "new_item_ids": ["8479046075"], "payment_method_id": "credit_card_0000000"}),
        ("exchange_delivered_order_items", {"order_id": "#W4817420", "item_ids": ["4900661478"], "new_item_ids": ["8479046075"], "payment_method_id": "gift_card_8168843"}),
        ("get_order_details", {"order_id": "#W4817420"}),
        ("return_delivered_order_items", {"order_id": "#W4817420", "item_ids": ["4900661478"], "payment_method_id": "gift_card_8168843"}),
        ("exchange_delivered_order_items", {"order_id": "#W2611340", "item_ids": [], "new_item_ids": [], "payment_method_id": "gift_card_8168843"}),
    ],
    "modify a user's address": [
        ("modify_user_address", {"user_id": "noah_brown_6181", "address1": "9 Oak Ave", "address2": "Unit 4", "city": "Boulder", "state": "CO", "country": "USA", "zip": "80301"}),
        ("get_user_details", {"user_id": "noah_brown_6181"}),
        ("find_user_id_by_name_zip", {"first_name": "Noah", "last_name": "Brown", "zip": "80301"}),
        ("find_user_id_by_name_zip", {"first_name": "Noah", "last_name": "Brown", "zip": "80279"}),
        ("modify_user_address", {"user_id": "nobody_0000", "address1": "9 Oak Ave", "address2": "", "city": "Boulder", "state": "CO", "country": "USA", "zip": "80301"}),
    ],
    "arguments": [
        ("get_order_details", {}),
        ("get_order_details", {"order_id": "#W3220387", "verbose": "yes"}),
        ("modify_pending_order_payment", {}),
        ("modify_user_address", {"user_id": "noah_brown_6181"}),
    ],
}

with open(os.path.join(here, "golden.jsonl"), "w") as out:
    for name, calls in sessions.items():
        tools = retail_tools.RetailTools(retail_data_model.RetailDB.load(db_path))
        got = []
        for tool, args in calls:
            text, err = answer(tools, tool, args)
            got.append({"tool": tool, "arguments": args, "text": text, "is_error": err})
        out.write(json.dumps({"session": name, "calls": got}, ensure_ascii=False) + "\n")
