"""The docs site's reference pages are generated from the code (docs/hooks/reference.py): every
command, option and spec key must carry its own description, or the page would have a hole.
No server, no MkDocs needed: the hook's walkers are imported as they are."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
HOOK = ROOT / "docs" / "hooks" / "reference.py"


def _load_hook():
    spec = importlib.util.spec_from_file_location("docs_reference_hook", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _load_hook()
COMMANDS = list(reference.walk_commands(reference.cli_root()))
SPEC_KEYS = [
    (f"{header} {key}", field)
    for header, model, _ in reference.spec_tables()
    for key, field in reference.spec_keys(model)
]


def test_the_walks_find_what_the_lab_has():
    """A walk that stopped early would pass every test below with nothing checked."""
    paths = {" ".join(path) for path, _ in COMMANDS}
    assert {
        "pgcachelab run",
        "pgcachelab doctor",
        "pgcachelab tpcc run",
        "pgcachelab store copy",
    } <= paths
    keys = {name for name, _ in SPEC_KEYS}
    assert {"top level repetitions", "[pgbench] clients", "[inspect] alternate", "[[ladder]] name",
            "per point os_cache"} <= keys  # fmt: skip


@pytest.mark.parametrize("path, command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_and_option_says_what_it_does(path, command):
    assert reference.command_help(command), f"{' '.join(path)}: no help (its docstring)"
    for param in reference.visible_params(command):
        assert (param.help or "").strip(), f"{' '.join(path)} {param.name}: no help="


@pytest.mark.parametrize("key, field", SPEC_KEYS, ids=[name for name, _ in SPEC_KEYS])
def test_every_spec_key_says_what_it_means(key, field):
    assert (field.description or "").strip(), f"{key}: no Field(description=...)"
    assert reference.field_type(field), f"{key}: no type"


def test_every_table_says_what_it_is():
    for header, _, about in reference.spec_tables():
        assert about.strip(), f"{header}: no description"


def test_the_generated_pages_list_every_command_and_key():
    cli_page = reference.cli_markdown()
    for path, command in COMMANDS:
        assert f"`{' '.join(path)}`" in cli_page
        for param in reference.visible_params(command):
            assert param.help.split()[0] in cli_page
    spec_page = reference.spec_markdown()
    for name, _ in SPEC_KEYS:
        assert f"| `{name.split()[-1]}` |" in spec_page
