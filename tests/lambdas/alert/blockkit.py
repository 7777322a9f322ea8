"""Block Kit limits from Slack's reference (docs.slack.dev/reference/block-kit), for asserts."""

from __future__ import annotations

from typing import Any

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
TEXT_TYPES = {"plain_text", "mrkdwn"}
BLOCK_TYPES = {"header", "section", "divider", "context"}


def assert_valid_blocks(blocks: list[dict[str, Any]]) -> None:
    """Fail with the offending block when a limit or a required field is broken."""
    assert isinstance(blocks, list) and 0 < len(blocks) <= MAX_BLOCKS, len(blocks)
    for block in blocks:
        assert block["type"] in BLOCK_TYPES, block
        if block["type"] == "header":
            assert block["text"]["type"] == "plain_text", block
            assert 0 < len(block["text"]["text"]) <= MAX_HEADER_TEXT, block
        elif block["type"] == "section":
            assert block["text"]["type"] in TEXT_TYPES, block
            assert 0 < len(block["text"]["text"]) <= MAX_SECTION_TEXT, len(block["text"]["text"])
        elif block["type"] == "context":
            assert 0 < len(block["elements"]) <= MAX_CONTEXT_ELEMENTS, block
            for element in block["elements"]:
                assert element["type"] in TEXT_TYPES and element["text"], block


def all_text(blocks: list[dict[str, Any]]) -> str:
    parts = []
    for block in blocks:
        if "text" in block:
            parts.append(block["text"]["text"])
        parts.extend(e.get("text", "") for e in block.get("elements", ()))
    return "\n".join(parts)
