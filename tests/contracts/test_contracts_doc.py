"""docs/contracts.md is checked against the one definition of each payload (contracts/)."""

from __future__ import annotations

import dataclasses

from contracts import doc


def test_the_generated_field_tables_are_up_to_date():
    stale = doc.stale_blocks(doc.DOC.read_text())
    assert stale == [], f"run `python -m contracts.doc` to regenerate {stale}"


def test_every_field_of_every_model_is_in_its_section():
    text = doc.DOC.read_text()
    for name, models in doc.BLOCKS.items():
        section = text.split(f"<!-- contracts:{name} -->")[1]
        section = section.split(f"<!-- /contracts:{name} -->")[0]
        for model in models:
            assert f"`{model.__module__}.{model.__qualname__}`" in section
            for field in dataclasses.fields(model):
                json_name = doc.JSON_NAMES.get((model, field.name), field.name)
                assert f"| `{json_name}` |" in section, (model.__qualname__, field.name)


def test_a_stale_block_is_found_and_regenerated(tmp_path):
    page = tmp_path / "contracts.md"
    page.write_text(doc.DOC.read_text().replace("| `ingest_id` |", "| `ingest` |", 1))
    assert doc.main(["--check", "--doc", str(page)]) == 1
    assert doc.main(["--doc", str(page)]) == 0
    assert page.read_text() == doc.DOC.read_text()
