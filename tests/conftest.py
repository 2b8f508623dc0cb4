"""The suite's fixtures and helpers live in plugin files, one per topic (see README.md):
tests import helpers from the file that defines them (`from fix_cli import run_cli`)."""

pytest_plugins = ["fix_processes", "fix_clusters", "fix_cli", "fix_lab", "fix_reports", "fix_netns"]

# Property tests (hypothesis): the same examples on every run, and no example database left in
# the checkout (a run leaves nothing behind).
from hypothesis import settings  # noqa: E402

settings.register_profile("lab", database=None, derandomize=True, deadline=None)
settings.load_profile("lab")
