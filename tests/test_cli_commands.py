"""The commands' shape (cli/main.py): each a plain function in a module of its own, registered
in one table, callable without the command line."""

import ast
from pathlib import Path

import pytest

from pgcachelab.cli import main, runs, show, stores
from pgcachelab.cli.options import DEFAULT_LAB_DIR
from pgcachelab.errors import UserError

CLI_DIR = Path(main.__file__).parent
# What the commands share; every other module of cli/ is a command (or a group of them).
HELPERS = ("__init__", "main", "options", "output", "plan", "progress", "stores")


def _registered() -> list:
    functions = []
    for command in main.COMMANDS.values():
        if isinstance(command, main.Group):
            functions.extend(command.commands.values())
        else:
            functions.append(command)
    return functions


def test_every_command_is_a_plain_function_registered_in_main_only():
    for path in sorted(CLI_DIR.glob("*.py")):
        tree = ast.parse(path.read_text())
        calls = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("command", "add_typer", "callback")
        ]
        if path.name != "main.py":
            assert not calls, f"{path.name} registers a command itself: add it to main.COMMANDS"
    functions = _registered()
    assert len(functions) == len(set(functions))
    modules = {p.stem for p in CLI_DIR.glob("*.py")} - set(HELPERS)
    # a command module left out of COMMANDS shows here
    assert {f.__module__.removeprefix("pgcachelab.cli.") for f in functions} == modules


def test_a_command_called_as_a_function(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PGCACHELAB_STORE", raising=False)
    with pytest.raises(UserError, match="^--lab-dir: no results in "):
        show.show("last", lab_dir=tmp_path)  # read-only: a missing store is not created
    assert not (tmp_path / "results.sqlite").exists()
    stores.writable_store(tmp_path).close()
    runs.list_runs(lab_dir=tmp_path)
    assert capsys.readouterr().out.strip()  # the (empty) table's header
    with pytest.raises(UserError, match="^no runs in "):
        show.show("last", lab_dir=tmp_path)
    with pytest.raises(UserError, match="^no run 'nope' in "):
        show.show("nope", lab_dir=tmp_path)


def test_the_lab_dir_default_is_the_same_for_every_command():
    import inspect

    for function in _registered():
        parameter = inspect.signature(function).parameters.get("lab_dir")
        if parameter is not None:
            assert parameter.default == DEFAULT_LAB_DIR, function.__qualname__
